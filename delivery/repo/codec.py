"""Conversions between Python values and the columns, shared by the repositories.

Storable text.  Text fields may hold any character, but PostgreSQL refuses
U+0000 in ``text`` and in ``jsonb`` strings (and the ``\\u0000`` escape in
``jsonb`` input).  Every text and JSON parameter of every write goes through
:func:`storable_text`, :func:`storable_params` or :func:`storable_json`, which
replace it by U+FFFD there, so a record is never refused for it.  They only
scan further when the cheap ``in`` test finds a NUL: the hot path pays one
``memchr`` per value.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any, overload

import orjson

from streams.ids import derived_id
from topology.schemas.base import Record, encode

#: What a character a sink cannot store becomes there.
REPLACEMENT = "\ufffd"
_NUL = "\x00"
#: The JSON escape of U+0000 (not a literal backslash followed by "u0000":
#: an even run of backslashes before it is escaped backslashes).
_NUL_ESCAPE = re.compile(rb"(?<!\\)((?:\\\\)*)\\u0000")
_NUL_ESCAPE_TEST = b"\\u0000"


@overload
def storable_text(value: str) -> str: ...
@overload
def storable_text(value: None) -> None: ...
def storable_text(value: str | None) -> str | None:
    """``value`` with every U+0000 replaced by U+FFFD (``None`` stays ``None``)."""
    if value is None or _NUL not in value:
        return value
    return value.replace(_NUL, REPLACEMENT)


def storable_json(data: bytes | str) -> str:
    """JSON text that ``jsonb`` accepts: every ``\\u0000`` escape made ``\\ufffd``."""
    raw = data.encode() if isinstance(data, str) else data
    if _NUL_ESCAPE_TEST in raw:
        raw = _NUL_ESCAPE.sub(rb"\1\\ufffd", raw)
    return raw.decode()


def json_param(record: Record) -> str:
    """A record as the JSON text of a ``jsonb`` parameter (storable)."""
    return storable_json(encode(record))


def _storable(value: object) -> object:
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, list):
        return [storable_text(v) if isinstance(v, str) else v for v in value]
    return value


def storable_params(values: Iterable[object]) -> tuple[object, ...]:
    """A statement's parameters with every ``str`` (also inside a list: ``text[]``) storable.

    Pass JSON parameters through :func:`storable_json` first: this only
    replaces raw NULs, which never appear in encoded JSON.
    """
    return tuple(_storable(v) for v in values)


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
