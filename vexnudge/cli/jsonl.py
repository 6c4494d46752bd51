"""Reading JSON-lines input for the bulk research commands (one object per line)."""

from __future__ import annotations

import json
from typing import Any


def read_record(raw: bytes, fields: tuple[str, ...]) -> dict[str, Any] | str:
    """The line's object, or the reason it is unusable.

    Reasons: ``invalid_utf8``, ``empty_line``, ``invalid_json``,
    ``not_an_object``, ``missing_<field>``, ``<field>_not_string`` (each of
    ``fields`` must be present and a string).
    """
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "invalid_utf8"
    if not line.strip():
        return "empty_line"
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return "invalid_json"
    if not isinstance(record, dict):
        return "not_an_object"
    for name in fields:
        if record.get(name) is None:
            return f"missing_{name}"
        if not isinstance(record[name], str):
            return f"{name}_not_string"
    return record
