"""The gateway's Postgres access: replay, history, questions, the board snapshot.

A question is stored by the feedback service
(:meth:`feedback.service.FeedbackService.record_question`), the one owner of a
durable request; the message cursor goes through :mod:`delivery.repo.messages`;
the two read-only views only the gateway needs (history since a time, the
board's recent triggers with their nudges) are queried here.

The question limits count a student's pending questions here, and the
re-publish sweep finds pending questions whose student message was never
published (the gateway stored them, then Kafka refused the publish).

Invariants: replay returns a student's messages with ``id > cursor`` in id
order, all of them (paged), whatever their role or origin; a question and its
student-role message are stored in one transaction under ids derived from the
request id, so a retried POST stores nothing twice.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import asyncpg

from delivery.gateway.payloads import MessageView
from delivery.repo import messages as repo_messages

if TYPE_CHECKING:
    from feedback.service import FeedbackService

REPLAY_PAGE = 500
#: The stream carries both sides of the conversation.
ROLES: tuple[repo_messages.Role, ...] = ("assistant", "student")

_SINCE = """
select id, response_id::text as response_id, student_key, session_id, role, origin,
       message_text, feedback_classes, model, trigger_id::text as trigger_id, created_at
from chat.messages
where student_key = $1 and created_at >= $2
order by id
limit $3
"""

_BOARD = """
select t.trigger_id::text as trigger_id, t.student_key, t.session_id, t.trigger_type,
       t.detail, t.fired_at, t.run_index, t.alert, t.playground, t.evidence, t.status,
       t.reason, m.id as message_id, m.response_id::text as response_id, m.message_text,
       m.created_at as message_created_at, m.feedback_classes, m.model
from event_logs.agent_triggers t
left join chat.messages m on m.response_id = t.response_id
order by t.id desc
limit $1
"""


def view_of(row: repo_messages.MessageRow) -> MessageView:
    """A repository message row as a view."""
    return MessageView(
        message_id=row.id,
        response_id=row.response_id,
        student_key=row.student_key,
        session_id=row.session_id,
        role=row.role,
        origin=str(row.origin.value),
        text=row.text,
        created_ts=row.created_at,
        feedback_classes=row.classes,
        model=row.model,
        trigger_id=row.trigger_id,
    )


def _view_of_record(r: asyncpg.Record) -> MessageView:
    return MessageView(
        message_id=r["id"],
        response_id=r["response_id"],
        student_key=r["student_key"],
        session_id=r["session_id"],
        role=r["role"],
        origin=r["origin"],
        text=r["message_text"],
        created_ts=r["created_at"].timestamp(),
        feedback_classes=tuple(r["feedback_classes"] or ()),
        model=r["model"],
        trigger_id=r["trigger_id"],
    )


async def replay_page(pool: asyncpg.Pool, student_key: str, after_id: int) -> list[MessageView]:
    """The next :data:`REPLAY_PAGE` messages of the student with ``id > after_id``, in id order."""
    rows = await repo_messages.messages_after(pool, student_key, after_id, limit=REPLAY_PAGE, roles=ROLES)
    return [view_of(row) for row in rows]


async def history_since(
    pool: asyncpg.Pool, student_key: str, since: datetime, limit: int = REPLAY_PAGE
) -> list[MessageView]:
    """The student's messages created at or after ``since`` (oldest first, capped)."""
    rows = await pool.fetch(_SINCE, student_key, since, limit)
    return [_view_of_record(row) for row in rows]


@dataclass(frozen=True, slots=True)
class StoredQuestion:
    """What storing a question did."""

    request_id: str
    message: MessageView
    new_request: bool
    new_message: bool


async def store_question(
    service: FeedbackService, *, request_id: str, student_key: str, session_id: str | None, text: str
) -> StoredQuestion:
    """Record the question (chat.requests) and its student message (chat.messages)
    through the feedback service, the one owner of a durable request.

    The student message's response id is the request id itself.
    """
    recorded = await service.record_question(
        request_id=request_id, student_key=student_key, session_id=session_id, text=text
    )
    stored = recorded.message
    message = MessageView(
        message_id=int(stored.id),
        response_id=str(stored.response_id),
        student_key=student_key,
        session_id=session_id,
        role="student",
        origin="reactive",
        text=text,
        created_ts=stored.created_at,
    )
    return StoredQuestion(request_id, message, recorded.new_request, stored.inserted)


async def board_snapshot(pool: asyncpg.Pool, limit: int = 200) -> list[dict[str, Any]]:
    """The most recently stored triggers (newest first) with the nudge sent for each, if any.

    Both lookups use primary/unique indexes (``agent_triggers.id``,
    ``messages.response_id``), so the snapshot stays cheap on a large history.
    """
    from delivery.gateway.payloads import iso

    out: list[dict[str, Any]] = []
    for r in await pool.fetch(_BOARD, limit):
        message = None
        if r["message_id"] is not None:
            message = {
                "message_id": r["message_id"],
                "response_id": r["response_id"],
                "text": r["message_text"],
                "created_at": iso(r["message_created_at"].timestamp()),
                "feedback_classes": list(r["feedback_classes"] or ()),
                "model": r["model"],
            }
        evidence = r["evidence"]
        out.append(
            {
                "trigger_id": r["trigger_id"],
                "student_key": r["student_key"],
                "session_id": r["session_id"],
                "type": r["trigger_type"],
                "detail": r["detail"],
                "fired_at": iso(r["fired_at"].timestamp()),
                "run_index": r["run_index"],
                "alert": r["alert"],
                "playground": r["playground"],
                "evidence": evidence if isinstance(evidence, dict) else {},
                "status": r["status"],
                "reason": r["reason"],
                "message": message,
            }
        )
    return out


async def mark_published(pool: asyncpg.Pool, message_id: int) -> None:
    """Note that the gateway handed this message to ``vex.feedback``."""
    await repo_messages.mark_published(pool, [message_id])


async def ping(pool: asyncpg.Pool) -> bool:
    """The database answers."""
    return bool(await pool.fetchval("select 1") == 1)


# --- question limits and the re-publish sweep -------------------------------------

_PENDING = "select count(*) from chat.requests where student_key = $1 and status = 'pending'"

_UNPUBLISHED_QUESTIONS = """
select r.request_id::text as request_id, r.student_key, r.session_id, r.question, r.asked_at,
       m.id as message_id, m.created_at
from chat.requests r
join chat.messages m on m.response_id = r.request_id and m.role = 'student'
where r.status = 'pending' and m.published_at is null
  and r.asked_at <= now() - make_interval(secs => $1)
order by r.asked_at
limit $2
"""


async def question_stored(pool: asyncpg.Pool, request_id: str) -> bool:
    """A question with this request id is stored (a retried POST, not a new question)."""
    return bool(
        await pool.fetchval("select exists(select 1 from chat.requests where request_id = $1)", uuid.UUID(request_id))
    )


async def pending_count(pool: asyncpg.Pool, student_key: str) -> int:
    """The student's questions still waiting for an answer."""
    return int(await pool.fetchval(_PENDING, student_key))


async def is_published(pool: asyncpg.Pool, message_id: int) -> bool:
    """The message was handed to ``vex.feedback``."""
    return bool(await pool.fetchval("select published_at is not null from chat.messages where id = $1", message_id))


@dataclass(frozen=True, slots=True)
class UnpublishedQuestion:
    """A pending question whose student message was never published."""

    request_id: str
    student_key: str
    session_id: str | None
    text: str
    asked_ts: float
    message_id: int
    created_ts: float


async def unpublished_questions(
    pool: asyncpg.Pool, *, older_than_s: float, limit: int = 100
) -> list[UnpublishedQuestion]:
    """Pending questions asked more than ``older_than_s`` ago and never published, oldest first."""
    rows = await pool.fetch(_UNPUBLISHED_QUESTIONS, float(older_than_s), limit)
    return [
        UnpublishedQuestion(
            request_id=r["request_id"],
            student_key=r["student_key"],
            session_id=r["session_id"],
            text=r["question"],
            asked_ts=r["asked_at"].timestamp(),
            message_id=r["message_id"],
            created_ts=r["created_at"].timestamp(),
        )
        for r in rows
    ]
