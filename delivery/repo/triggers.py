"""Trigger fires and what became of their nudges: ``event_logs.agent_triggers``.

A fire is stored once: its ``trigger_id`` (derived from the fire-once key)
and the (student, session, type, fire key) are unique, and inserts use
``ON CONFLICT DO NOTHING``.  Status moves ``pending`` → ``acted`` (the
message is stored, ``response_id`` set) or ``failed`` (gave up); a
suppressed fire is stored ``suppressed`` with its reason and never moves.
A pending row keeps the full request (JSON) so that any worker can finish
it later; :func:`claim_due` hands such a row to exactly one worker at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

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
from topology.schemas.analysis import TriggerFired
from topology.schemas.feedback import FeedbackRequest

Status = Literal["pending", "acted", "suppressed", "failed"]

_COLUMNS = """
    id, trigger_id, student_key, session_id, trigger_type, fire_key, run_index, alert,
    fired_at, playground, detail, evidence, status, reason, response_id, attempts,
    last_error, request, created_at, updated_at
"""

_INSERT = """
insert into event_logs.agent_triggers
    (trigger_id, student_key, session_id, trigger_type, fire_key, run_index, alert, fired_at,
     playground, detail, evidence, status, reason, request)
values ($1, $2, $3, $4, $5, $6, $7, to_timestamp($8), $9, $10, $11::text::jsonb, $12, $13,
        $14::text::jsonb)
on conflict do nothing
returning id
"""

_TABLE = "event_logs.agent_triggers"


@dataclass(frozen=True, slots=True)
class TriggerRow:
    """One stored fire (times as epoch seconds)."""

    id: int
    trigger_id: str
    student_key: str
    session_id: str
    trigger_type: str
    fire_key: str
    run_index: int | None
    alert: int | None
    fired_at: float
    playground: str | None
    detail: str
    evidence: dict[str, Any]
    status: Status
    reason: str | None
    response_id: str | None
    attempts: int
    last_error: str | None
    request: FeedbackRequest | None
    created_at: float
    updated_at: float


def fire_key(trigger: TriggerFired) -> str:
    """``run:<index>`` for a momentary fire, ``idle:<since>:<alert>`` for inactive."""
    if trigger.run_index is not None:
        return f"run:{trigger.run_index}"
    since = trigger.evidence.idle_since_ts
    return f"idle:{(since if since is not None else trigger.ts):.3f}:{trigger.alert or 0}"


def _row(record: asyncpg.Record) -> TriggerRow:
    raw_request = record["request"]
    response = record["response_id"]
    return TriggerRow(
        id=record["id"],
        trigger_id=str(record["trigger_id"]),
        student_key=record["student_key"],
        session_id=record["session_id"],
        trigger_type=record["trigger_type"],
        fire_key=record["fire_key"],
        run_index=record["run_index"],
        alert=record["alert"],
        fired_at=epoch(record["fired_at"]) or 0.0,
        playground=record["playground"],
        detail=record["detail"],
        evidence=as_json(record["evidence"]),
        status=record["status"],
        reason=record["reason"],
        response_id=str(response) if response is not None else None,
        attempts=record["attempts"],
        last_error=record["last_error"],
        request=(FeedbackRequest.model_validate(as_json(raw_request)) if raw_request is not None else None),
        created_at=epoch(record["created_at"]) or 0.0,
        updated_at=epoch(record["updated_at"]) or 0.0,
    )


async def record_trigger(db: Executor, request: FeedbackRequest, *, status: Status, reason: str | None = None) -> bool:
    """Store the fire of a proactive ``request`` (with the request itself).

    :returns: True if the row is new; False if this fire was already stored
        (the stored row is left exactly as it was).
    :raises ValueError: when the request carries no trigger.
    """
    trigger = request.trigger
    if trigger is None:
        raise ValueError(f"request {request.request_id} carries no trigger")
    params = (
        as_uuid(trigger.trigger_id),
        trigger.student_key,
        trigger.session_id,
        trigger.type.value,
        fire_key(trigger),
        trigger.run_index,
        trigger.alert,
        trigger.ts,
        trigger.playground,
        trigger.detail,
        json_param(trigger.evidence),
        status,
        reason,
        json_param(request),
    )
    new_id = await db.fetchval(_INSERT, *storable_params(params))
    return new_id is not None


async def mark_acted(db: Executor, trigger_id: str, response_id: str, *, note: str | None = None) -> bool:
    """``pending``/``failed`` → ``acted`` with the message's response id.

    :param note: why the template answered (stored in ``last_error``).
    :returns: True if the row changed (False: unknown, already acted or suppressed).
    """
    status = await db.execute(
        "update event_logs.agent_triggers set status = 'acted', response_id = $2, reason = null,"
        " last_error = coalesce($3, last_error), updated_at = now()"
        " where trigger_id = $1 and status in ('pending', 'failed')",
        as_uuid(trigger_id),
        as_uuid(response_id),
        storable_text(note),
    )
    return rows_affected(status) == 1


async def mark_failed(db: Executor, trigger_id: str, error: str, *, reason: str = "gave_up") -> bool:
    """``pending`` → ``failed``: no more retries.  :returns: True if the row changed."""
    status = await db.execute(
        "update event_logs.agent_triggers set status = 'failed', reason = $3, last_error = $2,"
        " updated_at = now() where trigger_id = $1 and status = 'pending'",
        *storable_params((as_uuid(trigger_id), error, reason)),
    )
    return rows_affected(status) == 1


async def note_attempt(db: Executor, trigger_id: str, error: str) -> int:
    """Count one failed attempt (and its error).  :returns: the attempts so far (0: no row)."""
    value = await db.fetchval(
        "update event_logs.agent_triggers set attempts = attempts + 1, last_error = $2,"
        " updated_at = now() where trigger_id = $1 returning attempts",
        as_uuid(trigger_id),
        storable_text(error),
    )
    return int(value or 0)


async def get_trigger(db: Executor, trigger_id: str) -> TriggerRow | None:
    """The stored fire, or ``None``."""
    record = await db.fetchrow(
        f"select {_COLUMNS} from event_logs.agent_triggers where trigger_id = $1",
        as_uuid(trigger_id),
    )
    return _row(record) if record is not None else None


async def lock_trigger(conn: asyncpg.Connection, trigger_id: str) -> TriggerRow | None:
    """The stored fire, row-locked until the caller's transaction ends (waits for a holder)."""
    record = await conn.fetchrow(
        f"select {_COLUMNS} from event_logs.agent_triggers where trigger_id = $1 for update",
        as_uuid(trigger_id),
    )
    return _row(record) if record is not None else None


async def claim_due(
    conn: asyncpg.Connection,
    *,
    retry_after_s: float,
    max_delay_s: float,
    touched_before: datetime | None = None,
) -> TriggerRow | None:
    """Lock the oldest due pending fire that no other transaction holds.

    The due rule and ``touched_before``: :func:`delivery.repo.pending.claim_due`.
    Call inside a transaction; the row stays locked until it ends, so
    concurrent workers never claim the same fire.
    """
    record = await pending.claim_due(
        conn, _TABLE, _COLUMNS, retry_after_s=retry_after_s, max_delay_s=max_delay_s, touched_before=touched_before
    )
    return _row(record) if record is not None else None


async def pending_requests(db: Executor, *, older_than_s: float, limit: int = 100) -> list[FeedbackRequest]:
    """Requests of pending fires last touched more than ``older_than_s`` ago, oldest first."""
    rows = await pending.pending_rows(db, _TABLE, "request", older_than_s=older_than_s, limit=limit, with_request=True)
    return [FeedbackRequest.model_validate(as_json(r["request"])) for r in rows]


async def triggers_for(db: Executor, student_key: str, session_id: str) -> list[TriggerRow]:
    """Every stored fire of a session, in fire order."""
    rows = await db.fetch(
        f"select {_COLUMNS} from event_logs.agent_triggers"
        " where student_key = $1 and session_id = $2 order by fired_at, id",
        storable_text(student_key),
        storable_text(session_id),
    )
    return [_row(r) for r in rows]
