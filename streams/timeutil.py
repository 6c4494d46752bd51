"""Time formatting shared by the stream processors (pure)."""

from __future__ import annotations

from datetime import UTC, datetime


def iso_utc(ts: float) -> str:
    """Epoch seconds as ``YYYY-MM-DDTHH:MM:SSZ`` (fractions kept when present)."""
    moment = datetime.fromtimestamp(ts, UTC)
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
