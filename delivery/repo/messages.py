"""The conversation: ``chat.messages``.

``id`` is monotonic and is the SSE cursor (``Last-Event-ID``).  Every message
has a derived ``response_id`` (unique): a nudge's is derived from its
trigger, an answer's from the question, a student's question uses the
request id itself.  Inserting the same ``response_id`` again returns the
existing row and never makes a second one.  ``published_at`` marks an
assistant message handed to ``vex.feedback``; an unmarked one is published
again by the sweeper.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import asyncpg

from delivery.db import Executor
from delivery.repo.codec import as_uuid, epoch, rows_affected, storable_params, storable_text
from topology.schemas.feedback import FeedbackMessage, Lane

Role = Literal["student", "assistant"]

_INSERT = """
with ins as (
    insert into chat.messages
        (response_id, student_key, session_id, role, message_text, origin, feedback_classes,
         model, trigger_id, request_id)
    values ($1, $2, $3, $4, $5, $6, $7::text[], $8, $9, $10)
    on conflict (response_id) do nothing
    returning id, response_id, created_at
)
select id, response_id, created_at, true as inserted from ins
union all
select id, response_id, created_at, false from chat.messages
where response_id = $1 and not exists (select 1 from ins)
"""

_EXISTING = """
select id, response_id, created_at, false as inserted from chat.messages where response_id = $1
"""

_SELECT = """
select m.id, m.response_id, m.student_key, m.session_id, m.role, m.message_text, m.origin,
       m.feedback_classes, m.model, m.trigger_id, m.request_id, m.created_at, m.published_at,
       t.trigger_type, t.detail as trigger_detail
from chat.messages m left join event_logs.agent_triggers t on t.trigger_id = m.trigger_id
"""


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """The row a message insert ended with; ``inserted`` False: it existed already."""

    id: int
    response_id: str
    created_at: float
    inserted: bool


@dataclass(frozen=True, slots=True)
class MessageRow:
    """One stored message with its trigger's type and detail (nudges only)."""

    id: int
    response_id: str
    student_key: str
    session_id: str | None
    role: Role
    text: str
    origin: Lane
    classes: tuple[str, ...]
    model: str | None
    trigger_id: str | None
    request_id: str | None
    created_at: float
    published_at: float | None
    trigger_type: str | None
    trigger_detail: str | None

    def to_feedback_message(self) -> FeedbackMessage:
        """The record published on ``vex.feedback`` for this message."""
        return FeedbackMessage(
            message_id=self.id,
            response_id=self.response_id,
            student_key=self.student_key,
            session_id=self.session_id,
            role=self.role,
            origin=self.origin,
            text=self.text,
            feedback_classes=list(self.classes),
            model=self.model,
            trigger_id=self.trigger_id,
            trigger_type=self.trigger_type,
            trigger_detail=self.trigger_detail,
            created_at=self.created_at,
        )


def _opt(value: object) -> str | None:
    return str(value) if value is not None else None


def _row(r: asyncpg.Record) -> MessageRow:
    return MessageRow(
        id=r["id"],
        response_id=str(r["response_id"]),
        student_key=r["student_key"],
        session_id=r["session_id"],
        role=r["role"],
        text=r["message_text"],
        origin=Lane(r["origin"]),
        classes=tuple(r["feedback_classes"] or ()),
        model=r["model"],
        trigger_id=_opt(r["trigger_id"]),
        request_id=_opt(r["request_id"]),
        created_at=epoch(r["created_at"]) or 0.0,
        published_at=epoch(r["published_at"]),
        trigger_type=r["trigger_type"],
        trigger_detail=r["trigger_detail"],
    )


def _stored(r: asyncpg.Record) -> StoredMessage:
    return StoredMessage(
        id=r["id"],
        response_id=str(r["response_id"]),
        created_at=epoch(r["created_at"]) or 0.0,
        inserted=bool(r["inserted"]),
    )


async def insert_message(
    db: Executor,
    *,
    response_id: str,
    student_key: str,
    session_id: str | None,
    role: Role,
    text: str,
    origin: Lane | str,
    classes: Sequence[str] = (),
    model: str | None = None,
    trigger_id: str | None = None,
    request_id: str | None = None,
) -> StoredMessage:
    """Store a message once per ``response_id``.

    :returns: the new row, or the existing row with ``inserted=False`` (its
        text is NOT replaced: the first stored message wins).
    """
    args = (
        as_uuid(response_id),
        student_key,
        session_id or None,
        role,
        text,
        Lane(origin).value,
        [str(c) for c in classes],
        model,
        as_uuid(trigger_id) if trigger_id else None,
        as_uuid(request_id) if request_id else None,
    )
    record = await db.fetchrow(_INSERT, *storable_params(args))
    if record is None:
        # A concurrent insert committed after this statement's snapshot was taken.
        record = await db.fetchrow(_EXISTING, args[0])
    if record is None:  # pragma: no cover - the conflict row cannot vanish (no deletes)
        raise RuntimeError(f"message {response_id} neither inserted nor found")
    return _stored(record)


async def get_message(db: Executor, response_id: str) -> MessageRow | None:
    """The message stored under ``response_id``, or ``None``."""
    record = await db.fetchrow(f"{_SELECT} where m.response_id = $1", as_uuid(response_id))
    return _row(record) if record is not None else None


async def reply_for_request(db: Executor, request_id: str) -> MessageRow | None:
    """The assistant's reply to the question ``request_id``, or ``None`` (not yet)."""
    record = await db.fetchrow(
        f"{_SELECT} where m.request_id = $1 and m.role = 'assistant' order by m.id limit 1",
        as_uuid(request_id),
    )
    return _row(record) if record is not None else None


async def messages_after(
    db: Executor,
    student_key: str,
    after_id: int,
    limit: int = 500,
    *,
    roles: Sequence[Role] = ("assistant",),
) -> list[MessageRow]:
    """The student's messages with ``id > after_id``, ascending (SSE replay).

    :param roles: which roles to return; by default the assistant's messages,
        the ones the stream carries.
    """
    rows = await db.fetch(
        f"{_SELECT} where m.student_key = $1 and m.id > $2 and m.role = any($3::text[]) order by m.id limit $4",
        storable_text(student_key),
        after_id,
        list(roles),
        limit,
    )
    return [_row(r) for r in rows]


async def recent_chat(
    db: Executor,
    student_key: str,
    session_id: str | None,
    limit: int = 6,
    *,
    exclude_response_id: str | None = None,
) -> list[tuple[str, str]]:
    """The last ``limit`` turns of a session as ``(role, text)``, oldest first.

    :param exclude_response_id: leave this message out (the question being answered).
    """
    rows = await db.fetch(
        "select role, message_text from chat.messages where student_key = $1"
        " and session_id is not distinct from $2 and response_id is distinct from $3"
        " order by id desc limit $4",
        storable_text(student_key),
        storable_text(session_id or None),
        as_uuid(exclude_response_id) if exclude_response_id else None,
        limit,
    )
    return [(r["role"], r["message_text"]) for r in reversed(rows)]


async def mark_published(db: Executor, ids: Sequence[int]) -> int:
    """Mark messages as handed to ``vex.feedback``.  :returns: rows newly marked."""
    if not ids:
        return 0
    status = await db.execute(
        "update chat.messages set published_at = now() where id = any($1::bigint[]) and published_at is null",
        list(ids),
    )
    return rows_affected(status)


async def unpublished(db: Executor, *, older_than_s: float, limit: int = 100) -> list[MessageRow]:
    """Assistant messages stored more than ``older_than_s`` ago and never published."""
    rows = await db.fetch(
        f"{_SELECT} where m.published_at is null and m.role = 'assistant'"
        " and m.created_at <= now() - make_interval(secs => $1) order by m.id limit $2",
        float(older_than_s),
        limit,
    )
    return [_row(r) for r in rows]
