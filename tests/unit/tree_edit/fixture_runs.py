"""Reading the fixture logs the way the golden files were made (test helper).

Implements just enough of the fixtures' rules to rebuild every stream's run
sequence: line acceptance (blank lines, invalid JSON, non-objects, the payload
inside ``raw_message`` / ``content``, required fields, timestamps, duplicate
ids), stream keys and stream order.  The production engine lives in
``streams/``; this is an independent re-reading for the distance tests.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REQUIRED = ("studentID", "sessionID", "timestamp", "eventType")


@dataclass(frozen=True)
class Event:
    """An accepted line: its payload, envelope id and place in the file."""

    line: int
    envelope_id: object
    payload: dict[str, Any]
    ts: float

    @property
    def order(self) -> tuple[float, int, int, int]:
        """Stream order: time, integer ids before other ids, id, line."""
        if isinstance(self.envelope_id, int) and not isinstance(self.envelope_id, bool):
            return (self.ts, 0, self.envelope_id, self.line)
        return (self.ts, 1, 0, self.line)


def accepted_events(path: Path) -> list[Event]:
    """Every accepted line of a log, in file order."""
    seen: set[object] = set()
    events: list[Event] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        event = _read_line(number, line)
        if event is None:
            continue
        key = event.envelope_id
        if isinstance(key, bool) or not isinstance(key, int | str):
            key = None
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        events.append(event)
    return events


def _read_line(number: int, line: str) -> Event | None:
    if not line.strip():
        return None
    try:
        envelope = json.loads(line.strip())
    except ValueError:
        return None
    if not isinstance(envelope, dict):
        return None
    payload = _payload(envelope)
    if payload is None:
        return None
    for name in REQUIRED:
        value = payload.get(name)
        if not isinstance(value, str) or not value.strip():
            return None
    try:
        moment = datetime.fromisoformat(payload["timestamp"])
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return Event(number, envelope.get("id"), payload, moment.timestamp())


def _payload(envelope: dict[str, Any]) -> dict[str, Any] | None:
    raw = envelope["raw_message"] if "raw_message" in envelope else envelope.get("content")
    if raw is None:
        return envelope
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    return raw if isinstance(raw, dict) else None


def streams(events: list[Event], per_student: bool = False) -> dict[tuple[str, ...], list[Event]]:
    """Events per (student key, session id), or per student key, in stream order."""
    grouped: dict[tuple[str, ...], list[Event]] = defaultdict(list)
    for event in events:
        student = event.payload["studentID"].strip().lower()
        key = (student,) if per_student else (student, event.payload["sessionID"])
        grouped[key].append(event)
    return {key: sorted(found, key=lambda e: e.order) for key, found in grouped.items()}


def runs(stream: list[Event]) -> Iterator[Event]:
    """The ``runProject`` events of a stream."""
    return (event for event in stream if event.payload["eventType"] == "runProject")
