"""Ingest core: one raw telemetry line → a normalized event or a rejection.

Pure and deterministic.  The checks run in the normative order (first failure
wins): invalid_json, not_an_object, invalid_raw_message, missing_studentID,
missing_sessionID, missing_timestamp, missing_eventType, bad_timestamp,
then duplicate_id, then the hostile-line screen (too_large, bad_field,
future_timestamp; :mod:`streams.screen`).  ``duplicate_id`` needs memory of
accepted ids (:class:`SeenIds`, owned per student by the adapter) and is
decided by :mod:`streams.dedupe`; a screen rejection is therefore returned
*deferred*, and the check ranks a duplicate before it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from streams.screen import (
    DEFAULT_LIMITS,
    FIELD_MAX_CHARS,
    SMALL_LINE,
    Limits,
    bad_field,
    clipped_text,
    future_timestamp,
    label_text,
    short_text,
    small_mapping,
    too_large,
)
from streams.timeutil import iso_utc
from topology.schemas import NormalizedEvent, RejectReason, SourceRef
from tree_edit import Unusable, WorkspaceStatus, workspace_xml

_REQUIRED = (
    ("studentID", RejectReason.MISSING_STUDENT_ID),
    ("sessionID", RejectReason.MISSING_SESSION_ID),
    ("timestamp", RejectReason.MISSING_TIMESTAMP),
    ("eventType", RejectReason.MISSING_EVENT_TYPE),
)


@dataclass(frozen=True, slots=True)
class Rejected:
    """A line that cannot be used, with its machine-readable reason."""

    reason: RejectReason
    detail: str
    event_id: str | None = None
    student_key: str | None = None
    session_id: str | None = None
    deferred: bool = False
    """A hostile-line screen rejection: ``duplicate_id`` still ranks before it."""


def student_key(student_id: str) -> str:
    """The canonical student key: ``studentID`` stripped and lower-cased."""
    return student_id.strip().lower()


def envelope_event_id(envelope_id: object, line: bytes) -> tuple[str, int | None]:
    """The event id as text and, when integral, as an int.

    Integers keep their decimal text (``"9000014"``); string ids get an ``s:``
    prefix so they never collide with an integer; a line without a usable id
    (absent, null, boolean, other types) gets ``h:`` + a content hash, so a
    replay of the same line yields the same id.
    """
    if isinstance(envelope_id, int) and not isinstance(envelope_id, bool):
        return str(envelope_id), envelope_id
    if isinstance(envelope_id, str):
        return "s:" + envelope_id, None
    return "h:" + hashlib.sha1(line).hexdigest()[:20], None


def parse_timestamp(value: str) -> datetime | None:
    """An ISO-8601 date-time (``Z`` or no offset = UTC), or None if it is not one."""
    text = value.strip()
    if len(text) < 11 or text[10] not in "Tt ":
        return None
    if text[-1] in "zZ":
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def _loads(data: bytes | str) -> tuple[bool, Any]:
    try:
        return True, orjson.loads(data)
    except orjson.JSONDecodeError:
        return False, None


def _payload(envelope: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    value = envelope["raw_message"] if "raw_message" in envelope else envelope.get("content")
    if value is None:
        return envelope, ""
    if isinstance(value, dict):
        return value, ""
    if isinstance(value, str):
        ok, decoded = _loads(value)
        if not ok:
            return None, "raw_message is a string that is not valid JSON"
        if not isinstance(decoded, dict):
            return None, f"raw_message decodes to {type(decoded).__name__}, not an object"
        return decoded, ""
    return None, f"raw_message is {type(value).__name__}, not an object or a JSON string"


def _blank(value: object) -> bool:
    return not isinstance(value, str) or not value.strip()


def _decoded_object(value: object) -> dict[str, Any] | None:
    """A JSON string or an object → the object; anything else → None."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        ok, decoded = _loads(value)
        if ok and isinstance(decoded, dict):
            return decoded
    return None


def read_workspace(project: object) -> tuple[str, str | None]:
    """The JSON-level reading of a payload ``project``: (status, workspace xml).

    Status is ``ok``, ``empty_workspace`` or an unusable reason
    (``no_project``, ``project_not_json``, ``project_not_object``,
    ``workspace_not_string``).  XML well-formedness is judged later.
    """
    found = workspace_xml(_decoded_project(project))
    if isinstance(found, Unusable):
        return found.reason.value, None
    xml, status = found
    if status is WorkspaceStatus.EMPTY:
        return "empty_workspace", None
    return "ok", xml


def _decoded_project(project: object) -> object:
    """A project string decoded by orjson when it holds the usual shape, an
    object whose ``workspace`` is a string: ``json`` reads that the same, and
    orjson is several times faster.  Anything else is left to tree_edit's own
    ``json`` reading (orjson refuses some of what ``json`` accepts)."""
    if isinstance(project, str) and not project.lstrip().startswith("<"):
        ok, value = _loads(project)
        if ok and isinstance(value, dict) and isinstance(value.get("workspace"), str):
            return value
    return project


def _optional_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _build_event(
    envelope: dict[str, Any],
    payload: dict[str, Any],
    ts: float,
    line: bytes,
    source: SourceRef | None,
) -> NormalizedEvent:
    event_id, id_int = envelope_event_id(envelope.get("id"), line)
    student_id = payload["studentID"].strip()
    status, xml = read_workspace(payload.get("project"))
    params = (_decoded_object(payload.get("playgroundData")) or {}).get("parameters")
    block_event = _decoded_object(payload.get("blockEventData"))
    if len(line) > SMALL_LINE:  # only a long line can carry oversize side fields
        params, block_event = small_mapping(params), small_mapping(block_event)
    return NormalizedEvent(
        event_id=event_id,
        envelope_id_int=id_int,
        student_key=student_id.lower(),
        student_id=student_id,
        session_id=payload["sessionID"],
        event_type=payload["eventType"].strip(),
        ts=ts,
        timestamp=iso_utc(ts),
        received_at=short_text(envelope.get("received_at", envelope.get("recieved_at"))),
        playground=label_text(payload.get("playground")),
        class_code=label_text(payload.get("classCode", envelope.get("classCode"))),
        workspace_status=status,
        workspace_xml=xml,
        playground_params=params if isinstance(params, dict) else None,
        block_event=block_event,
        error_message=clipped_text(payload.get("errorMessage")),
        source=source,
    )


def decode_line(
    line: bytes,
    source: SourceRef | None = None,
    limits: Limits = DEFAULT_LIMITS,
    now: float | None = None,
) -> NormalizedEvent | Rejected:
    """Validate and normalize one raw line (duplicate ids are not judged here).

    :param limits: the hostile-line screen's limits.
    :param now: the live clock for the clock-skew check of a line without
        ``received_at`` (None: a replay, which accepts such a line).
    """
    ok, envelope = _loads(line)
    if not ok:
        return Rejected(RejectReason.INVALID_JSON, "the line is not valid JSON")
    if not isinstance(envelope, dict):
        return Rejected(RejectReason.NOT_AN_OBJECT, f"the line is a JSON {type(envelope).__name__}")
    event_id = envelope_event_id(envelope.get("id"), line)[0]
    payload, why = _payload(envelope)
    if payload is None:
        return Rejected(RejectReason.INVALID_RAW_MESSAGE, why, event_id)
    for field, reason in _REQUIRED:
        if _blank(payload.get(field)):
            return Rejected(reason, f"payload {field} is absent, null, not a string or blank", event_id)
    key = student_key(payload["studentID"])
    moment = parse_timestamp(payload["timestamp"])
    if moment is None:
        detail = f"timestamp {payload['timestamp'][:40]!r} is not an ISO-8601 date-time"
        return Rejected(RejectReason.BAD_TIMESTAMP, detail, event_id, key, payload["sessionID"])
    ts = moment.timestamp()
    refused = _screen(envelope, payload, ts, len(line), limits, now)
    if refused is not None:
        return Rejected(refused[0], refused[1], event_id, *refused[2], deferred=True)
    return _build_event(envelope, payload, ts, line, source)


def _screen(
    envelope: dict[str, Any],
    payload: dict[str, Any],
    ts: float,
    size: int,
    limits: Limits,
    now: float | None,
) -> tuple[RejectReason, str, tuple[str | None, str | None]] | None:
    """Checks 7-9; the reason, detail and (student key, session) of a refused line."""
    verdict = too_large(size, limits) or bad_field(payload)
    if verdict is None:
        received = envelope.get("received_at", envelope.get("recieved_at"))
        moment = parse_timestamp(received) if isinstance(received, str) else None
        verdict = future_timestamp(ts, moment, now, limits)
    if verdict is None:
        return None
    where = (student_key(payload["studentID"]), payload["sessionID"])
    return RejectReason(verdict.reason), verdict.detail, where


def is_blank(line: bytes) -> bool:
    """A line that is empty or only whitespace (skipped, never rejected)."""
    return not line.strip()


def routing_key(line: bytes) -> str | None:
    """The student key of a raw line for partitioning, or None if it has none.

    Uses the same payload rules as :func:`decode_line`, so a producer that keys
    by this puts every event of a student on one partition.
    """
    ok, envelope = _loads(line)
    if not ok or not isinstance(envelope, dict):
        return None
    payload, _ = _payload(envelope)
    if payload is None or _blank(payload.get("studentID")):
        return None
    key = student_key(payload["studentID"])
    return key if len(key) <= FIELD_MAX_CHARS else None


class SeenIds:
    """Accepted envelope ids of one student with the raw offset that carried
    each, bounded (oldest forgotten first).

    The same id at the same offset is a re-delivery of the record that was
    accepted (after a crash), not a duplicate; ids of rejected lines are never
    remembered; the first copy of an id wins.
    """

    __slots__ = ("_ids", "limit")

    def __init__(self, ids: dict[str, int] | list[str] | None = None, limit: int = 20_000) -> None:
        self.limit = limit
        if isinstance(ids, list):
            ids = dict.fromkeys(ids, -1)
        self._ids: dict[str, int] = dict(ids or {})  # insertion order = acceptance order

    def seen(self, event_id: str) -> bool:
        """True when ``event_id`` was accepted before."""
        return event_id in self._ids

    def accepted_at(self, event_id: str) -> int | None:
        """The raw offset that carried the accepted copy of ``event_id``."""
        return self._ids.get(event_id)

    def add(self, event_id: str, offset: int = -1) -> None:
        """Remember an accepted id, forgetting the oldest beyond the limit."""
        self._ids[event_id] = offset
        while len(self._ids) > self.limit:
            del self._ids[next(iter(self._ids))]

    def to_json(self) -> dict[str, int]:
        """The ids and offsets, oldest first (for table storage)."""
        return dict(self._ids)

    def to_bytes(self) -> bytes:
        """:meth:`to_json` as JSON bytes (without the copy)."""
        return orjson.dumps(self._ids)

    def to_list(self) -> list[str]:
        """The ids, oldest first."""
        return list(self._ids)
