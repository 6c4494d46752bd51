"""Students' questions, the reactive lane's outbox: ``chat.requests``.

A question is stored once under its request id (``ON CONFLICT DO NOTHING``),
whoever stores it first (the gateway, ``vexnudge ask`` or the feedback
service).  Status moves ``pending`` → ``answered`` (the reply is stored,
``response_id`` set) or ``failed`` (gave up).  Once the analysis stage has
built the feedback request it is attached to the row, so any worker can
answer a pending question later; :func:`claim_due` hands a row to exactly
one worker at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import asyncpg

from delivery.db import Executor
from delivery.repo import pending
from delivery.repo.codec import (
    as_json,
    as_uuid,
    epoch,
    json_param,
    rows_affected,
    storable_params,
    storable_text,
)
from topology.schemas.feedback import FeedbackRequest

QuestionStatus = Literal["pending", "answered", "failed"]

_COLUMNS = """
    request_id, student_key, session_id, question, status, response_id, attempts,
    last_error, request, asked_at, updated_at
"""

_TABLE = "chat.requests"


@dataclass(frozen=True, slots=True)
class QuestionRow:
    """One stored question (times as epoch seconds)."""

    request_id: str
    student_key: str
    session_id: str | None
    question: str
    status: QuestionStatus
    response_id: str | None
    attempts: int
    last_error: str | None
    request: FeedbackRequest | None
    asked_at: float
    updated_at: float


def _row(record: asyncpg.Record) -> QuestionRow:
    raw_request = record["request"]
    response = record["response_id"]
    return QuestionRow(
        request_id=str(record["request_id"]),
        student_key=record["student_key"],
        session_id=record["session_id"],
        question=record["question"],
        status=record["status"],
        response_id=str(response) if response is not None else None,
        attempts=record["attempts"],
        last_error=record["last_error"],
        request=(FeedbackRequest.model_validate(as_json(raw_request)) if raw_request is not None else None),
        asked_at=epoch(record["asked_at"]) or 0.0,
        updated_at=epoch(record["updated_at"]) or 0.0,
    )


async def record_question(db: Executor, request_id: str, student_key: str, session_id: str | None, text: str) -> bool:
    """Store a question as ``pending``.  :returns: True if new (False: already stored)."""
    value = await db.fetchval(
        "insert into chat.requests (request_id, student_key, session_id, question, status)"
        " values ($1, $2, $3, $4, 'pending') on conflict do nothing returning request_id",
        *storable_params((as_uuid(request_id), student_key, session_id or None, text)),
    )
    return value is not None


async def attach_request(db: Executor, request_id: str, feedback_request: FeedbackRequest) -> bool:
    """Keep the built feedback request with the question (fills a missing session id).

    :returns: True if the question exists.
    """
    status = await db.execute(
        "update chat.requests set request = $2::text::jsonb,"
        " session_id = coalesce(session_id, nullif($3, '')), updated_at = now()"
        " where request_id = $1",
        as_uuid(request_id),
        json_param(feedback_request),
        storable_text(feedback_request.session_id),
    )
    return rows_affected(status) == 1


async def mark_answered(db: Executor, request_id: str, response_id: str, *, note: str | None = None) -> bool:
    """``pending``/``failed`` → ``answered``; ``note`` (why the template answered)
    goes to ``last_error``.  :returns: True if the row changed."""
    status = await db.execute(
        "update chat.requests set status = 'answered', response_id = $2,"
        " last_error = coalesce($3, last_error), updated_at = now()"
        " where request_id = $1 and status in ('pending', 'failed')",
        as_uuid(request_id),
        as_uuid(response_id),
        storable_text(note),
    )
    return rows_affected(status) == 1


async def mark_failed(db: Executor, request_id: str, error: str) -> bool:
    """``pending`` → ``failed``: no more retries.  :returns: True if the row changed."""
    status = await db.execute(
        "update chat.requests set status = 'failed', last_error = $2, updated_at = now()"
        " where request_id = $1 and status = 'pending'",
        as_uuid(request_id),
        storable_text(error),
    )
    return rows_affected(status) == 1


async def note_attempt(db: Executor, request_id: str, error: str) -> int:
    """Count one failed attempt.  :returns: the attempts so far (0: no such question)."""
    value = await db.fetchval(
        "update chat.requests set attempts = attempts + 1, last_error = $2, updated_at = now()"
        " where request_id = $1 returning attempts",
        as_uuid(request_id),
        storable_text(error),
    )
    return int(value or 0)


async def get_question(db: Executor, request_id: str) -> QuestionRow | None:
    """The stored question, or ``None``."""
    record = await db.fetchrow(f"select {_COLUMNS} from chat.requests where request_id = $1", as_uuid(request_id))
    return _row(record) if record is not None else None


async def lock_question(conn: asyncpg.Connection, request_id: str) -> QuestionRow | None:
    """The stored question, row-locked until the caller's transaction ends."""
    record = await conn.fetchrow(
        f"select {_COLUMNS} from chat.requests where request_id = $1 for update",
        as_uuid(request_id),
    )
    return _row(record) if record is not None else None


async def claim_due(
    conn: asyncpg.Connection,
    *,
    retry_after_s: float,
    max_delay_s: float,
    touched_before: datetime | None = None,
) -> QuestionRow | None:
    """Lock the oldest due pending question with a request that no one else holds.

    Same due rule and ``touched_before`` as :func:`delivery.repo.triggers.claim_due`
    (:func:`delivery.repo.pending.claim_due`); call inside a transaction.
    """
    record = await pending.claim_due(
        conn, _TABLE, _COLUMNS, retry_after_s=retry_after_s, max_delay_s=max_delay_s, touched_before=touched_before
    )
    return _row(record) if record is not None else None


async def pending_questions(db: Executor, *, older_than_s: float = 0.0, limit: int = 100) -> list[QuestionRow]:
    """Pending questions last touched more than ``older_than_s`` ago, oldest first."""
    rows = await pending.pending_rows(db, _TABLE, _COLUMNS, older_than_s=older_than_s, limit=limit)
    return [_row(r) for r in rows]
