"""The event store: normalized events into PostgreSQL, from a consumer group of its own.

Batches of ``vex.events`` are written with one idempotent insert each (keyed
by the event id) and the offsets committed after each batch, so a restart
re-stores at most one batch and the insert ignores it.  While the database is
unreachable the store holds its consumer and retries with backoff (never
dropping); an event the database refuses for its content is dead-lettered
(reason ``sink_refused``, stage ``store``) after the refused batch was
written one by one, so only the refused events are left out.

It shares the worker's PostgreSQL pool with the feedback stage
(:func:`streams.agents.feedback.resources`) and its dead-letter path
(:func:`streams.agents.feedback.dead_letter_refused`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from streams.agents.feedback import Resources, dead_letter_refused, resources
from streams.agents.pipeline import Pipeline
from topology import topics as T
from topology.schemas import NormalizedEvent, decode
from topology.schemas.base import encode

log = logging.getLogger("vexnudge.eventstore")
#: Events per stored batch, and how long a batch waits to fill.
STORE_BATCH, STORE_WITHIN_S = 500, 0.5


def register_event_store(p: Pipeline) -> None:
    """Normalized events into PostgreSQL, with a consumer group of its own.

    A plain consumer (group ``<APP_ID>-event-store``) rather than a second agent
    on ``vex.events``, so the store never holds back the analysis (an agent
    pair would share the topic's delivery and acknowledgements).  Offsets are
    committed after each batch is stored; a restart re-stores at most one
    batch, which the idempotent insert ignores.
    """
    res = resources(p)

    @p.app.task
    async def event_store() -> None:
        from aiokafka import AIOKafkaConsumer

        consumer = AIOKafkaConsumer(
            p.settings.topic(T.EVENTS.name),
            bootstrap_servers=p.settings.kafka_bootstrap_servers,
            group_id=f"{p.settings.app_id}-event-store",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=STORE_BATCH,
        )
        await consumer.start()
        try:
            await run_event_store(consumer, lambda events: store_with_retry(res, events))
        finally:
            await consumer.stop()


async def run_event_store(consumer: Any, store: Callable[[list[NormalizedEvent]], Awaitable[None]]) -> None:
    """Store batches from ``consumer`` and commit after each, until cancelled.

    Never raises otherwise: a task's exception would crash the whole worker.  A
    commit refused because the group rebalanced (another worker joined or left)
    is expected: the new owner re-reads from the last commit and the insert is
    idempotent.  Any other failure is logged and retried after a pause.
    """
    from aiokafka.errors import CommitFailedError

    while True:
        try:
            batch = await consumer.getmany(timeout_ms=int(STORE_WITHIN_S * 1000))
            events = [e for records in batch.values() for r in records if (e := _stored_event(r)) is not None]
            if events:
                await store(events)
            if batch:
                await consumer.commit()
        except CommitFailedError:
            log.info(
                "event store: commit refused after a rebalance; the new owner stores those events again (idempotent)"
            )
        except Exception:  # keep the worker alive; try again
            log.exception("event store: batch failed; retrying in 1 s")
            await asyncio.sleep(1.0)


def _stored_event(record: Any) -> NormalizedEvent | None:
    """The record's event, or None (logged) for one that is not a normalized event.

    ``vex.events`` is written only by the ingest agent, so this means a foreign
    producer; the ingest already dead-lettered anything bad from the raw topic.
    """
    try:
        return decode(NormalizedEvent, record.value or b"")
    except Exception:  # noqa: BLE001 - one foreign record must not stop the store
        log.warning(
            "event store: skipping a record that is not a normalized event (partition %s, offset %s)",
            record.partition,
            record.offset,
        )
        return None


async def store_with_retry(res: Resources, events: list[NormalizedEvent]) -> None:
    """Write a batch to the event store, retrying (never dropping) while the DB is down.

    Events the database refuses are dead-lettered (a refused batch is written
    one by one first, so the others are stored).
    """
    from delivery.repo.errors import write_or_split
    from delivery.repo.events import store_events

    delay = 0.5
    while True:
        try:
            await res.ready()
            result = await write_or_split(events, lambda batch: store_events(res.pool, batch))
            break
        except Exception:  # a transient failure: hold the stream until the database is back
            log.exception("event store write of %d events failed; retrying in %.1f s", len(events), delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)
    for refusal in result.refused:
        event = refusal.item
        await dead_letter_refused(
            res.p,
            "store",
            encode(event),
            refusal.error,
            source=event.source,
            key=event.student_key,
            session_id=event.session_id,
            event_id=event.event_id,
        )
