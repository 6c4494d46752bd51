"""The gateway's typed application state (``web.AppKey``s) and its lifecycle.

Clients (the Postgres pool, the Kafka producer, the feed consumer, the
feedback service built by :func:`feedback.factory.build_service`) are created
once in :func:`clients_ctx` (an aiohttp cleanup context) and closed when the
app stops; open SSE streams live in :data:`STREAMS` and are ended in
``on_shutdown`` so a stop never waits for browsers to hang up.  A stream is
admitted by :func:`admit_stream` (the per-token and per-process caps) before
its response starts.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import asyncpg
from aiohttp import web
from aiokafka import AIOKafkaProducer

from delivery.gateway.auth import Authenticator, json_error
from delivery.gateway.caps import QuestionLimiter, Slot, StreamsFull, StreamSlots
from delivery.gateway.consumer import CONSUMED, FeedConsumer
from delivery.gateway.metrics import GatewayMetrics
from delivery.gateway.payloads import Outgoing
from delivery.gateway.pubsub import Hub
from delivery.gateway.sse import OpenStream, close_all
from topology import topics as T
from topology.schemas.base import encode
from topology.schemas.feedback import FeedbackMessage, NudgeOutcome
from topology.settings import Settings

if TYPE_CHECKING:
    from feedback.service import FeedbackService

log = logging.getLogger(__name__)


@dataclass
class Gateway:
    """Everything a handler needs, built once per app."""

    settings: Settings
    metrics: GatewayMetrics
    auth: Authenticator
    hub: Hub[Outgoing]
    slots: StreamSlots
    questions: QuestionLimiter
    pool: asyncpg.Pool | None = None
    producer: AIOKafkaProducer | None = None
    consumer: FeedConsumer | None = None
    service: FeedbackService | None = None
    """The feedback service: stores questions, answers the admin tick."""
    extras: dict[str, object] = field(default_factory=dict)
    """Clients built on demand."""
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    """Closed with the app, before the pool and the producer."""

    def need_pool(self) -> asyncpg.Pool:
        if self.pool is None:
            raise RuntimeError("the gateway's database pool is not open")
        return self.pool

    def need_producer(self) -> AIOKafkaProducer:
        if self.producer is None:
            raise RuntimeError("the gateway's Kafka producer is not started")
        return self.producer

    def need_service(self) -> FeedbackService:
        if self.service is None:
            raise RuntimeError("the gateway's feedback service is not built")
        return self.service

    async def publish_feedback(self, record: FeedbackMessage | NudgeOutcome) -> None:
        """The feedback service's publisher: a record to its topic, keyed by the student."""
        topic = self.settings.topic(T.home_of(type(record)).name)
        await self.need_producer().send_and_wait(topic, encode(record), key=record.student_key.encode())


GATEWAY: web.AppKey[Gateway] = web.AppKey("gateway", Gateway)
STREAMS: web.AppKey[set[OpenStream]] = web.AppKey("streams", set[OpenStream])


#: Retry-After of a stream refused because the process is full.
FULL_RETRY_AFTER_S = 10


def admit_stream(gw: Gateway, key: str, kind: str) -> Slot:
    """A slot for a new stream of ``key``; closes the key's oldest at its cap.

    :raises web.HTTPServiceUnavailable: the process holds ``SSE_MAX_STREAMS``.
    """
    try:
        return gw.slots.take(key)
    except StreamsFull as exc:
        gw.metrics.limited.labels("streams_total").inc()
        log.warning("refusing a %s stream: %s", kind, exc)
        raise json_error(
            web.HTTPServiceUnavailable,
            "too_many_streams",
            "this gateway serves as many streams as it may; try again shortly",
            {"Retry-After": str(FULL_RETRY_AFTER_S)},
        ) from None


def register_stream(app: web.Application, stream: OpenStream) -> None:
    app[STREAMS].add(stream)
    app[GATEWAY].metrics.open_streams.labels(stream.kind).inc()


def unregister_stream(app: web.Application, stream: OpenStream) -> None:
    stream.finished.set()
    if stream in app[STREAMS]:
        app[STREAMS].discard(stream)
        app[GATEWAY].metrics.open_streams.labels(stream.kind).dec()


async def clients_ctx(app: web.Application) -> AsyncIterator[None]:
    """Open the pool, the producer and the consumer; close them on cleanup."""
    from delivery.db import create_pool
    from feedback.factory import build_service
    from topology.kafka_admin import ensure_topics

    gw = app[GATEWAY]
    s = gw.settings
    await ensure_topics(s, [s.topic(name) for name in (*CONSUMED, T.CHAT_REQUESTS.name)])
    gw.pool = await create_pool(s)
    gw.producer = AIOKafkaProducer(
        bootstrap_servers=s.kafka_bootstrap_servers, enable_idempotence=True, linger_ms=0, client_id="vexnudge-gateway"
    )
    gw.consumer = FeedConsumer(s, gw.hub, gw.metrics)
    gw.service = service = build_service(s, gw.pool, gw.publish_feedback)
    try:
        await gw.producer.start()
        await gw.consumer.start()
        log.info("gateway: ready; consuming %s from their end", ", ".join(s.topic(n) for n in CONSUMED))
        yield
    finally:
        for close in reversed(gw.closers):
            try:
                await close()
            except Exception:  # closing must go on
                log.exception("gateway: closing a client failed")
        await service.aclose()
        await gw.consumer.stop()
        await gw.producer.stop()
        await gw.pool.close()


async def on_shutdown(app: web.Application) -> None:
    """End every open stream (clients reconnect elsewhere with Last-Event-ID)."""
    streams = app[STREAMS]
    if streams:
        log.info("gateway: closing %d open stream(s)", len(streams))
    await close_all(streams)
