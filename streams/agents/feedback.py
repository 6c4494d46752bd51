"""The feedback stage in the worker: requests → Postgres outbox → model → ``vex.feedback``.

For each :class:`FeedbackRequest` the agent first makes it durable in
Postgres (a pending nudge, a suppressed nudge, or a stored question) and only
then lets the record go; generation runs in the background, bounded by
``LLM_CONCURRENCY``, so a slow model never stalls the partition.  A crash or a
model outage leaves the row pending, and the retry timer finishes it later —
a nudge is delayed, never lost, and its message id is derived from the
trigger, so it is never sent twice.  The event store writes normalized events
to Postgres in batches (idempotent on the event id) from a consumer group of
its own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from streams.agents.emit import dead_letter_failure, publish
from streams.agents.ingest import source_of
from topology import topics as T
from topology.app import Pipeline
from topology.schemas import FeedbackMessage, FeedbackRequest, Lane, NormalizedEvent, NudgeOutcome, decode

log = logging.getLogger("vexnudge.feedback")
RETRY_INTERVAL_S = 5.0
STORE_BATCH, STORE_WITHIN_S = 500, 0.5


class Resources:
    """The worker's Postgres pool, model client and feedback service (created once)."""

    def __init__(self, p: Pipeline) -> None:
        self.p = p
        self._lock = asyncio.Lock()
        self.pool: Any = None
        self.llm: Any = None
        self.service: Any = None
        self.tasks: set[asyncio.Task[None]] = set()
        self.slots = asyncio.Semaphore(p.settings.llm_concurrency)

    async def ready(self) -> Any:
        """The feedback service, creating the pool and the client on first use."""
        async with self._lock:
            if self.service is None:
                from delivery.db import create_pool
                from feedback.llm import OllamaClient
                from feedback.service import FeedbackService

                self.pool = await create_pool(self.p.settings)
                self.llm = OllamaClient.from_settings(self.p.settings)
                self.service = FeedbackService(self.pool, self.llm, self.p.settings, self.publish,
                                               metrics=ServiceMetricsAdapter(self.p))
        return self.service

    def reset_if_broken(self) -> None:
        """Forget a pool that was never created (a first start while Postgres was down)."""
        if self.pool is None:
            self.service = None

    async def publish(self, record: FeedbackMessage | NudgeOutcome) -> None:
        await publish(self.p, record, record.student_key)

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if self.llm is not None:
            await self.llm.aclose()
        if self.pool is not None:
            await self.pool.close()


class ServiceMetricsAdapter:
    """The service's metric callbacks onto the worker's Prometheus metrics."""

    def __init__(self, p: Pipeline) -> None:
        self.m = p.metrics

    def model_call(self, seconds: float, *, ok: bool, error: str | None) -> None:
        self.m.model_seconds.observe(seconds)
        if not ok:
            self.m.model_failures.labels(error or "error").inc()

    def outcome(self, status: str, lane: Lane) -> None:
        self.m.nudges.labels(status).inc()

    def delivered(self, timing: Any) -> None:
        self.m.nudge_seconds.observe(timing.service_s)


async def accept(service: Any, request: FeedbackRequest) -> bool:
    """Make the request durable; True when generation is still to do."""
    from delivery.repo import outbox, triggers

    if request.lane is Lane.PROACTIVE and request.decision == "suppress":
        await service.handle(request)  # recorded with its reason; no model involved
        return False
    if request.lane is Lane.PROACTIVE:
        await triggers.record_trigger(service.pool, request, status="pending")
        return True
    async with service.pool.acquire() as conn, conn.transaction():
        await outbox.store_question(conn, request)
    return True


def resources(p: Pipeline) -> Resources:
    """The worker's one :class:`Resources`, closed at shutdown.

    Registering it imports the feedback service's modules and starts a task
    that opens the pool and builds the service as the worker starts: done
    lazily, that import (about 0.3 s) would run inside the event loop at the
    first trigger and stall every agent of the worker, the stream agent too.
    """
    res = p.extras.get("resources")
    if res is None:
        import delivery.db
        import delivery.repo.events
        import delivery.repo.outbox
        import delivery.repo.triggers
        import feedback.llm
        import feedback.service  # noqa: F401 - imported now, not at the first trigger

        res = p.extras["resources"] = Resources(p)

        @p.app.task
        async def _warm_up() -> None:
            try:
                await res.ready()
            except Exception as exc:  # noqa: BLE001 - Postgres down at start: the first use retries
                log.warning("feedback resources not ready at start (%s); retrying at first use", exc)
                res.reset_if_broken()

        @p.app.on_before_shutdown.connect
        async def _close(app: object, **kwargs: object) -> None:  # noqa: ARG001
            await res.close()
    return res


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
            p.settings.topic(T.EVENTS.name), bootstrap_servers=p.settings.kafka_bootstrap_servers,
            group_id=f"{p.settings.app_id}-event-store", enable_auto_commit=False,
            auto_offset_reset="earliest", max_poll_records=STORE_BATCH)
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
            events = [e for records in batch.values() for r in records
                      if (e := _stored_event(r)) is not None]
            if events:
                await store(events)
            if batch:
                await consumer.commit()
        except CommitFailedError:
            log.info("event store: commit refused after a rebalance; the new owner stores "
                     "those events again (idempotent)")
        except Exception:  # noqa: BLE001 - keep the worker alive; try again
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
        log.warning("event store: skipping a record that is not a normalized event "
                    "(partition %s, offset %s)", record.partition, record.offset)
        return None


def register(p: Pipeline) -> None:
    res = resources(p)

    async def generate(request: FeedbackRequest) -> None:
        try:
            service = await res.ready()
            await service.handle(request)
        except Exception:  # noqa: BLE001 - the row stays pending; the retry timer finishes it
            log.exception("feedback for %s failed; left pending for retry", request.request_id)
        finally:
            res.slots.release()

    @p.app.agent(p.topic(T.FEEDBACK_REQUESTS), name="feedback")
    async def feedback(stream):  # type: ignore[no-untyped-def]
        async for event in stream.events():
            message = event.message
            p.metrics.records_in.labels(T.FEEDBACK_REQUESTS.name).inc()
            try:
                request = decode(FeedbackRequest, message.value or b"")
            except Exception as exc:  # noqa: BLE001 - the stage edge: dead-letter and go on
                await dead_letter_failure(p, "feedback", message.value, source_of(message), exc)
                continue
            if await accept_with_retry(res, request):
                await res.slots.acquire()
                task = asyncio.ensure_future(generate(request))
                res.tasks.add(task)
                task.add_done_callback(res.tasks.discard)

    @p.app.timer(RETRY_INTERVAL_S)
    async def retry_pending() -> None:
        try:
            report = await (await res.ready()).retry_pending()
        except Exception:  # noqa: BLE001 - a database outage: try again next tick
            log.exception("retrying pending feedback failed")
            return
        if report.delivered or report.failed or report.republished:
            log.info("feedback retry: %s", report)


async def accept_with_retry(res: Resources, request: FeedbackRequest) -> bool:
    """:func:`accept`, holding the stream while Postgres is unreachable (never dropping)."""
    from feedback.errors import BadFeedbackRequest

    delay = 0.5
    while True:
        try:
            return await accept(await res.ready(), request)
        except BadFeedbackRequest:
            log.exception("feedback request %s cannot be acted on", request.request_id)
            return False
        except Exception:  # noqa: BLE001 - database outage: wait, then try again
            log.exception("storing feedback request %s failed; retrying in %.1f s",
                          request.request_id, delay)
            res.reset_if_broken()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)


async def store_with_retry(res: Resources, events: list[NormalizedEvent]) -> None:
    """Write a batch to the event store, retrying (never dropping) while the DB is down."""
    from delivery.repo.events import store_events

    delay = 0.5
    while True:
        try:
            await res.ready()
            await store_events(res.pool, events)
            return
        except Exception:  # noqa: BLE001 - hold the stream until the database is back
            log.exception("event store write of %d events failed; retrying in %.1f s", len(events), delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)
