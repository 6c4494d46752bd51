"""Conversions between Python values and the columns, shared by the repositories."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import orjson

from streams.ids import derived_id


def as_uuid(value: str) -> uuid.UUID:
    """``value`` as a UUID; a non-UUID id maps to its derived uuid5 (stable)."""
    try:
        return uuid.UUID(value)
    except ValueError:
        return uuid.UUID(derived_id("id", value))


def as_json(value: Any) -> Any:
    """A ``json``/``jsonb`` column value as Python (text when no codec is installed)."""
    if isinstance(value, (str, bytes)):
        return orjson.loads(value)
    return value


def epoch(moment: datetime | None) -> float | None:
    """An aware timestamp as epoch seconds."""
    return moment.timestamp() if moment is not None else None


def rows_affected(status: str) -> int:
    """The row count of a command status such as ``"INSERT 0 5"`` or ``"UPDATE 2"``."""
    tail = status.rsplit(" ", 1)[-1]
    return int(tail) if tail.isdigit() else 0
