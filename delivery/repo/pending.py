"""The outbox's pending and retry queries, shared by fires and questions.

``event_logs.agent_triggers`` and ``chat.requests`` are both outboxes with
the same life: a row is ``pending`` until its reply is stored, keeps the
built request (``request``), counts failed passes (``attempts``) and is
touched (``updated_at``) on every change.  The rule for when such a row is
due again, and the two queries that find pending rows, are written here once
and serve both tables.

Due: the row is pending, has its request, and its last attempt is older than
``retry_after_s * 2**attempts`` (the exponent capped at 20), at most
``max_delay_s``.
"""

from __future__ import annotations

from datetime import datetime

import asyncpg

from delivery.db import Executor

#: Where a pending row is due for a retry ($1 = base delay, $2 = the longest delay).
DUE = """
status = 'pending' and request is not null
and updated_at <= now() - make_interval(secs => least($1 * power(2, least(attempts, 20)), $2))
"""


async def claim_due(
    conn: asyncpg.Connection,
    table: str,
    columns: str,
    *,
    retry_after_s: float,
    max_delay_s: float,
    touched_before: datetime | None = None,
) -> asyncpg.Record | None:
    """Lock the oldest due pending row of ``table`` that no other transaction holds.

    Call inside a transaction; the row stays locked (``FOR UPDATE SKIP
    LOCKED``) until it ends, so concurrent workers never claim the same row.

    :param touched_before: only rows last updated before this (database)
        time: a sweep passes its start time so that it tries each row once.
    """
    return await conn.fetchrow(
        f"select {columns} from {table} where {DUE}"
        " and ($3::timestamptz is null or updated_at < $3)"
        " order by updated_at limit 1 for update skip locked",
        float(retry_after_s),
        float(max_delay_s),
        touched_before,
    )


async def pending_rows(
    db: Executor,
    table: str,
    columns: str,
    *,
    older_than_s: float,
    limit: int,
    with_request: bool = False,
) -> list[asyncpg.Record]:
    """Pending rows of ``table`` last touched more than ``older_than_s`` ago, oldest first.

    :param with_request: only rows that keep their built request.
    """
    return list(
        await db.fetch(
            f"select {columns} from {table} where status = 'pending'"
            f"{' and request is not null' if with_request else ''}"
            " and updated_at <= now() - make_interval(secs => $1) order by updated_at limit $2",
            float(older_than_s),
            limit,
        )
    )
