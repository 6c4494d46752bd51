"""What the browser receives: event names and JSON payloads (pure).

Two audiences, two shapes:

- **students** (``/v1/students/{id}/stream``) get the conversation only:
  text, role, origin and a neutral ``badge`` ("Check-in") on proactive
  messages.  Internal labels never reach a student: no trigger type, no
  trigger detail, no feedback class, no model name.
- **teachers** (``/admin/board/stream``) get everything the board needs:
  trigger type, detail and evidence, nudge status and reason, the text sent,
  the feedback classes and the model.

Message frames carry ``id:`` = the message id (the resume cursor); board
frames carry no id (a reconnecting board gets a fresh snapshot instead).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from delivery.gateway import sse
from topology.schemas.analysis import TriggerFired
from topology.schemas.feedback import FeedbackMessage, NudgeOutcome

#: Event names (documented in docs/gateway.md).
ASSISTANT_MESSAGE = "assistant_message"
STUDENT_MESSAGE = "student_message"
READY = "ready"
HISTORY = "history"
EVICTED = "evicted"
BOARD_SNAPSHOT = "snapshot"
BOARD_TRIGGER = "trigger"
BOARD_OUTCOME = "outcome"
BOARD_NUDGE = "nudge"

#: The only label a student ever sees on a proactive message.
PROACTIVE_BADGE = "Check-in"


@dataclass(frozen=True, slots=True)
class MessageView:
    """One stored chat message, whether read from Postgres or from ``vex.feedback``."""

    message_id: int
    response_id: str
    student_key: str
    session_id: str | None
    role: str
    origin: str
    text: str
    created_ts: float
    feedback_classes: tuple[str, ...] = ()
    model: str | None = None
    trigger_id: str | None = None

    @classmethod
    def from_record(cls, m: FeedbackMessage) -> MessageView:
        return cls(
            m.message_id,
            m.response_id,
            m.student_key,
            m.session_id,
            m.role,
            m.origin.value,
            m.text,
            m.created_at,
            tuple(m.feedback_classes),
            m.model,
            m.trigger_id,
        )


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A frame rendered once and offered to every subscriber of a key."""

    data: bytes
    message_id: int | None = None
    created_ts: float | None = None
    event: str = ""


def iso(ts: float) -> str:
    """Epoch seconds → ISO 8601 UTC with milliseconds (``...Z``)."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def student_payload(m: MessageView) -> dict[str, Any]:
    """The student-facing JSON of a message (no internal labels)."""
    proactive = m.origin == "proactive"
    return {
        "message_id": m.message_id,
        "response_id": m.response_id,
        "session_id": m.session_id,
        "role": m.role,
        "origin": m.origin,
        "text": m.text,
        "created_at": iso(m.created_ts),
        "created_ts": m.created_ts,
        "badge": PROACTIVE_BADGE if proactive and m.role == "assistant" else None,
    }


def student_event(m: MessageView) -> str:
    return STUDENT_MESSAGE if m.role == "student" else ASSISTANT_MESSAGE


def student_frame(m: MessageView, event_id: int | None = None, *, held: bool = False) -> bytes:
    """The SSE frame of ``m`` for its student; ``event_id`` defaults to the message id.

    ``held``: no ``id:`` at all (the stream's history is still owed).
    """
    if held:
        return sse.frame(_json(student_payload(m)), event=student_event(m))
    return sse.frame(
        _json(student_payload(m)), event=student_event(m), event_id=m.message_id if event_id is None else event_id
    )


def student_outgoing(m: MessageView) -> Outgoing:
    return Outgoing(_json(student_payload(m)).encode(), m.message_id, m.created_ts, student_event(m))


def outgoing_frame(item: Outgoing, event_id: int | None) -> bytes:
    """The wire frame of a pre-rendered item, with the cursor chosen by the stream."""
    return sse.frame(item.data.decode(), event=item.event or None, event_id=event_id)


def ready_frame(replayed: int, cursor: int | None, *, history: bool = True) -> bytes:
    """Sent once, after the replay: the stream is live from here on.

    ``history=False``: the history could not be read; it follows later in a
    ``history`` event, and frames carry no ``id:`` until then.
    """
    return sse.frame(
        _json({"replayed": replayed, "cursor": cursor, "history": "complete" if history else "pending"}), event=READY
    )


def history_frame(replayed: int, cursor: int | None) -> bytes:
    """The history that could not be read at connect time has now been sent.

    Its ``id:`` is the stream cursor, which is valid again from here on.
    """
    return sse.frame(_json({"replayed": replayed, "cursor": cursor}), event=HISTORY, event_id=cursor)


def evicted_frame(limit: int) -> bytes:
    """The last frame of a stream closed because its token opened too many."""
    return sse.frame(
        _json(
            {"reason": "too_many_streams", "limit": limit, "detail": "this conversation was opened in another window"}
        ),
        event=EVICTED,
    )


# --- teacher board ----------------------------------------------------------------


def board_trigger(t: TriggerFired) -> dict[str, Any]:
    """A live trigger for the board, still pending its outcome."""
    return {
        "trigger_id": t.trigger_id,
        "student_key": t.student_key,
        "session_id": t.session_id,
        "type": t.type.value,
        "detail": t.detail,
        "fired_at": iso(t.ts),
        "run_index": t.run_index,
        "alert": t.alert,
        "playground": t.playground,
        "evidence": t.evidence.model_dump(mode="json"),
        "status": "pending",
        "reason": None,
        "message": None,
    }


def board_outcome(o: NudgeOutcome) -> dict[str, Any]:
    return {
        "trigger_id": o.trigger_id,
        "student_key": o.student_key,
        "session_id": o.session_id,
        "type": o.trigger_type,
        "status": o.status,
        "reason": o.reason,
        "message_id": o.message_id,
        "response_id": o.response_id,
        "at": iso(o.at),
    }


def board_message(m: MessageView) -> dict[str, Any]:
    """A proactive message as the board shows it next to its trigger."""
    return {
        "trigger_id": m.trigger_id,
        "student_key": m.student_key,
        "message_id": m.message_id,
        "response_id": m.response_id,
        "text": m.text,
        "created_at": iso(m.created_ts),
        "feedback_classes": list(m.feedback_classes),
        "model": m.model,
    }


def board_outgoing(event: str, payload: dict[str, Any]) -> Outgoing:
    return Outgoing(_json(payload).encode(), None, None, event)


def board_frame(event: str, payload: Any) -> bytes:
    return sse.frame(_json(payload), event=event)
