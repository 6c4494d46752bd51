"""Event timestamps are written as ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z``, the same
text the ``strftime`` patterns give, across whole seconds, fractions, leap days
and years before 1000 (which keep ``strftime``'s unpadded year)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from streams.timeutil import iso_utc


def _strftime(ts: float) -> str:
    moment = datetime.fromtimestamp(ts, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if moment.microsecond else "%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(
    "ts",
    [
        0.0,
        1_700_000_000.0,
        1_700_000_000.5,
        1_700_000_000.000_001,
        951_782_400.25,
        4_102_444_799.999_999,
        -1.5,
        datetime(999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp(),
    ],
)
def test_iso_utc_matches_strftime(ts: float) -> None:
    assert iso_utc(ts) == _strftime(ts)


def test_iso_utc_examples() -> None:
    assert iso_utc(1_700_000_000.0) == "2023-11-14T22:13:20Z"
    assert iso_utc(1_700_000_000.25) == "2023-11-14T22:13:20.250000Z"
