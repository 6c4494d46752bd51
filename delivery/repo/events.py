"""The research event store: ``event_logs.events``.

One row per accepted event, keyed by (student key, event id), so storing a
re-delivered batch again inserts nothing.  A session's events come back in
stream order: event time, then the integer envelope id (non-integer ids
last), then the order they were stored in.
"""

from __future__ import annotations

from collections.abc import Sequence

from delivery.db import Executor
from delivery.repo.codec import as_json, json_param, rows_affected, storable_text
from topology.schemas.events import NormalizedEvent

_INSERT = """
insert into event_logs.events
    (student_key, event_id, session_id, student_id, event_type, event_ts, playground,
     record, source_topic, source_partition, source_offset)
select k, e, s, sid, t, to_timestamp(ts), pg, r::jsonb, st, sp, so
from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::float8[],
            $7::text[], $8::text[], $9::text[], $10::int4[], $11::int8[])
     with ordinality as u(k, e, s, sid, t, ts, pg, r, st, sp, so, n)
order by n
on conflict do nothing
"""

_ORDER = "event_ts {d}, (record->>'envelope_id_int')::bigint {d} {nulls}, seq {d}"

_SESSION = f"""
select record from event_logs.events
where student_key = $1 and session_id = $2
order by {_ORDER.format(d="asc", nulls="nulls last")}
"""

_LATEST = f"""
select session_id from event_logs.events
where student_key = $1
order by {_ORDER.format(d="desc", nulls="nulls first")}
limit 1
"""


def _columns(events: Sequence[NormalizedEvent]) -> list[list[object]]:
    cols: list[list[object]] = [[] for _ in range(11)]
    for ev in events:
        src = ev.source
        values = (
            storable_text(ev.student_key),
            storable_text(ev.event_id),
            storable_text(ev.session_id),
            storable_text(ev.student_id),
            storable_text(ev.event_type),
            ev.ts,
            storable_text(ev.playground),
            json_param(ev),
            storable_text(src.topic) if src else None,
            src.partition if src else None,
            src.offset if src else None,
        )
        for col, value in zip(cols, values, strict=True):
            col.append(value)
    return cols


async def store_events(db: Executor, events: Sequence[NormalizedEvent]) -> int:
    """Insert ``events`` in one statement; already stored ones are skipped.

    :returns: the number of rows actually inserted.
    """
    if not events:
        return 0
    status = await db.execute(_INSERT, *_columns(events))
    return rows_affected(status)


async def session_events(db: Executor, student_key: str, session_id: str) -> list[NormalizedEvent]:
    """The stored events of one session, in stream order."""
    rows = await db.fetch(_SESSION, storable_text(student_key), storable_text(session_id))
    return [NormalizedEvent.model_validate(as_json(row["record"])) for row in rows]


async def latest_session(db: Executor, student_key: str) -> str | None:
    """The session of the student's latest stored event, or ``None``."""
    value = await db.fetchval(_LATEST, storable_text(student_key))
    return str(value) if value is not None else None
