"""Time formatting shared by the stream processors (pure)."""

from __future__ import annotations

from datetime import UTC, datetime


def iso_utc(ts: float) -> str:
    """Epoch seconds as ``YYYY-MM-DDTHH:MM:SSZ`` (fractions kept when present).

    ``isoformat`` writes the same text as the ``strftime`` patterns below at
    half the cost (every event is stamped); they differ only before the year
    1000, which ``strftime`` does not pad."""
    moment = datetime.fromtimestamp(ts, UTC)
    if moment.year >= 1000:
        return moment.isoformat()[:-6] + "Z"  # drop "+00:00"
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
