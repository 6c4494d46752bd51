"""The feedback stage in the worker: requests → Postgres outbox → model → ``vex.feedback``.

For each :class:`FeedbackRequest` the agent first makes it durable in
Postgres (a pending nudge, a suppressed nudge, or a stored question) and only
then lets the record go; generation runs in the background, bounded by
``LLM_CONCURRENCY``, so a slow model never stalls the partition.  A crash or a
model outage leaves the row pending, and the retry timer finishes it later —
a nudge is delayed, never lost, and its message id is derived from the
trigger, so it is never sent twice.  The worker's PostgreSQL pool and the
dead-letter path for refused records live here too; the event store
(:mod:`streams.agents.eventstore`) shares them.

The feedback lane and the event store hold their stream and retry with
backoff only while the database is unreachable; a record the database refuses
for its content (:func:`delivery.repo.errors.classify`) is dead-lettered
(reason ``sink_refused``, with the database's message), counted in
``vexnudge_sink_dead_letters_total`` and ``/healthz``, and the lane goes on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Literal

from streams.agents.emit import dead_letter_failure, publish
from streams.agents.ingest import source_of
from streams.agents.pipeline import Pipeline
from streams.deadletters import original_text
from topology import topics as T
from topology.schemas import (
    DeadLetter,
    FeedbackMessage,
    FeedbackRequest,
    Lane,
    NudgeOutcome,
    RejectReason,
    SourceRef,
    decode,
)
from topology.schemas.base import encode

log = logging.getLogger("vexnudge.feedback")
RETRY_INTERVAL_S = 5.0


class Resources:
    """The worker's Postgres pool and feedback service (created once; the service owns
    its model client)."""

    def __init__(self, p: Pipeline) -> None:
        self.p = p
        self._lock = asyncio.Lock()
        self.pool: Any = None
        self.service: Any = None
        self.tasks: set[asyncio.Task[None]] = set()
        self.slots = asyncio.Semaphore(p.settings.llm_concurrency)

    async def ready(self) -> Any:
        """The feedback service, creating the pool and the service on first use."""
        async with self._lock:
            if self.service is None:
                from delivery.db import create_pool
                from feedback.factory import build_service

                self.pool = await create_pool(self.p.settings)
                self.service = build_service(
                    self.p.settings,
                    self.pool,
                    self.publish,
                    metrics=ServiceMetricsAdapter(self.p),
                    on_refused=self.refused_request,
                )
        return self.service

    def reset_if_broken(self) -> None:
        """Forget a pool that was never created (a first start while Postgres was down)."""
        if self.pool is None:
            self.service = None

    async def publish(self, record: FeedbackMessage | NudgeOutcome) -> None:
        await publish(self.p, record, record.student_key)

    async def refused_request(
        self, request: FeedbackRequest, error: str, source: SourceRef | None = None, data: bytes | None = None
    ) -> None:
        """Dead-letter a feedback request the database refused."""
        await dead_letter_refused(
            self.p,
            "feedback",
            data or encode(request),
            error,
            source=source,
            key=request.student_key,
            session_id=request.session_id,
        )

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if self.service is not None:
            await self.service.aclose()
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


def resources(p: Pipeline) -> Resources:
    """The worker's one :class:`Resources`, closed at shutdown.

    Registering it imports the feedback service's modules and starts a task
    that opens the pool and builds the service as the worker starts: done
    lazily, that import (about 0.3 s) would run inside the event loop at the
    first trigger and stall every agent of the worker, the stream agent too.
    """
    res = p.extras.get("resources")
    if res is None:
        # imported now, not at the first trigger
        import delivery.db
        import delivery.repo.events  # noqa: F401
        import feedback.factory  # noqa: F401

        res = p.extras["resources"] = Resources(p)

        @p.app.task
        async def _warm_up() -> None:
            try:
                await res.ready()
            except Exception as exc:  # noqa: BLE001 - Postgres down at start: the first use retries
                log.warning("feedback resources not ready at start (%s); retrying at first use", exc)
                res.reset_if_broken()

        # mode's stub for a signal handler accepts no coroutine function mypy can match
        @p.app.on_before_shutdown.connect  # type: ignore[arg-type]
        async def _close(app: object, **kwargs: object) -> None:
            await res.close()

    return res


def register(p: Pipeline) -> None:
    res = resources(p)

    async def generate(request: FeedbackRequest) -> None:
        try:
            service = await res.ready()
            await service.handle(request)
        except Exception:  # the row stays pending; the retry timer finishes it
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
            if await accept_with_retry(res, request, message):
                await res.slots.acquire()
                task = asyncio.ensure_future(generate(request))
                res.tasks.add(task)
                task.add_done_callback(res.tasks.discard)

    @p.app.timer(RETRY_INTERVAL_S)
    async def retry_pending() -> None:
        try:
            report = await (await res.ready()).retry_pending()
        except Exception:  # a database outage: try again next tick
            log.exception("retrying pending feedback failed")
            return
        if report.delivered or report.failed or report.republished:
            log.info("feedback retry: %s", report)


async def accept_with_retry(res: Resources, request: FeedbackRequest, message: Any = None) -> bool:
    """The service makes ``request`` durable (:meth:`~feedback.service.FeedbackService.accept`),
    holding the stream while Postgres is unreachable (never dropping); True when
    generation is still to do.

    A request the database refuses is dead-lettered (``sink_refused``), one that
    cannot be acted on at all too (``processing_error``); both return False.
    ``message``: the Kafka message it came in (its bytes and position go into
    the dead letter).
    """
    from delivery.repo.errors import describe, is_transient
    from feedback.errors import BadFeedbackRequest

    data = message.value if message is not None else None
    source = source_of(message) if message is not None else None
    delay = 0.5
    while True:
        try:
            service = await res.ready()
            return bool(await service.accept(request))
        except BadFeedbackRequest as exc:
            await dead_letter_failure(
                res.p, "feedback", data or encode(request), source or _NO_SOURCE, exc, request.student_key
            )
            return False
        except Exception as exc:  # classified: refused, or an outage
            if res.service is not None and not is_transient(exc):
                await res.refused_request(request, describe(exc), source, data)
                return False
            log.exception("storing feedback request %s failed; retrying in %.1f s", request.request_id, delay)
            res.reset_if_broken()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)


_NO_SOURCE = SourceRef(topic="", partition=-1, offset=-1)
#: Tries to publish one dead letter before giving up on it (each failure counted).
DEAD_LETTER_TRIES = 5
_SINKS = {"store": "event_store", "feedback": "feedback"}


async def dead_letter_refused(
    p: Pipeline,
    stage: Literal["store", "feedback"],
    data: bytes,
    error: str,
    *,
    source: SourceRef | None = None,
    key: str | None = None,
    session_id: str | None = None,
    event_id: str | None = None,
) -> None:
    """Dead-letter a record a sink refused for its content (reason ``sink_refused``), and count it.

    Publishing is tried up to :data:`DEAD_LETTER_TRIES` times with backoff (each
    failure is counted in ``vexnudge_publish_failures_total`` and ``/healthz``),
    so a dead letter the producer keeps refusing never stalls the lane.
    """
    log.error("%s: the database refused a record of %s (dead-lettered): %s", stage, key or "-", error)
    text, encoding = original_text(data)
    record = DeadLetter(
        reason=RejectReason.SINK_REFUSED,
        stage=stage,
        detail=error,
        original=text,
        original_encoding=encoding,  # type: ignore[arg-type]
        source=source,
        event_id=event_id,
        student_key=key,
        session_id=session_id,
        dead_lettered_at=time.time(),
    )
    delay = 0.5
    for attempt in range(1, DEAD_LETTER_TRIES + 1):
        try:
            await publish(p, record, key)
            break
        except Exception:  # counted by publish; wait and try again
            log.exception("publishing a dead letter failed (try %d of %d)", attempt, DEAD_LETTER_TRIES)
            if attempt < DEAD_LETTER_TRIES:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)
    p.metrics.sink_dead_lettered(_SINKS[stage], RejectReason.SINK_REFUSED.value)
