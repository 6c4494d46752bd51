"""The gateway's one Kafka consumer: ``vex.feedback``, ``vex.triggers`` and
``vex.nudge.outcomes`` into the in-process :class:`~delivery.gateway.pubsub.Hub`.

No consumer group: every partition is assigned by hand and read from its end
at start-up, so each gateway replica sees every message (a student may be
connected to any replica) and a restart never waits for a rebalance.  What
was published before the start is not needed: a client that missed it
resumes from Postgres with ``Last-Event-ID``; the board loads a snapshot.

Each record is decoded once and rendered once; a record that does not decode
is logged and counted, never fatal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.structs import ConsumerRecord

from delivery.gateway import payloads as P
from delivery.gateway.metrics import GatewayMetrics
from delivery.gateway.pubsub import BOARD, Hub
from topology import topics as T
from topology.schemas.analysis import TriggerFired
from topology.schemas.base import SchemaError, decode
from topology.schemas.feedback import FeedbackMessage, NudgeOutcome
from topology.seam.offsets import force_metadata_update
from topology.settings import Settings

log = logging.getLogger(__name__)

CONSUMED = (T.FEEDBACK.name, T.TRIGGERS.name, T.NUDGE_OUTCOMES.name)


class FeedConsumer:
    """Reads the three topics and publishes rendered frames to the hub."""

    def __init__(
        self, settings: Settings, hub: Hub[P.Outgoing], metrics: GatewayMetrics, clock: Callable[[], float] = time.time
    ) -> None:
        self.settings, self.hub, self.metrics, self.clock = settings, hub, metrics, clock
        self._names = {settings.topic(name): name for name in CONSUMED}
        self._consumer: AIOKafkaConsumer | None = None
        self._task: asyncio.Task[None] | None = None
        self.last_poll: float = 0.0
        self.assigned = False

    async def start(self) -> None:
        """Connect, assign every partition at its end, start the poll loop."""
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.settings.kafka_bootstrap_servers,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="latest",
            fetch_max_wait_ms=100,
            max_poll_records=1000,
            client_id="vexnudge-gateway",
        )
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for topic in self._names for p in await self._partitions(consumer, topic)]
            consumer.assign(tps)
            await consumer.seek_to_end(*tps)
            for tp in tps:  # resolve positions now, so nothing published after start is skipped
                await consumer.position(tp)
        except BaseException:
            await consumer.stop()
            raise
        self._consumer, self.assigned, self.last_poll = consumer, True, self.clock()
        self._task = asyncio.create_task(self._run(), name="gateway-consumer")

    async def _partitions(self, consumer: AIOKafkaConsumer, topic: str) -> list[int]:
        for _ in range(50):
            parts = consumer.partitions_for_topic(topic)
            if parts:
                return sorted(parts)
            await force_metadata_update(consumer)
            await asyncio.sleep(0.1)
        raise RuntimeError(f"topic {topic!r} has no partitions; create the topics first")

    async def stop(self) -> None:
        """Stop the loop and the client (idempotent)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None

    @property
    def running(self) -> bool:
        """The loop is alive and polled recently."""
        return self._task is not None and not self._task.done() and self.clock() - self.last_poll < 30.0

    async def _run(self) -> None:
        assert self._consumer is not None
        while True:
            try:
                batch = await self._consumer.getmany(timeout_ms=1000)
            except asyncio.CancelledError:
                raise
            except Exception:  # a broker hiccup must not end the gateway
                log.exception("gateway consumer: poll failed; retrying in 1 s")
                await asyncio.sleep(1.0)
                continue
            self.last_poll = self.clock()
            for records in batch.values():
                for record in records:
                    self.dispatch(record)

    def dispatch(self, record: ConsumerRecord[bytes, bytes]) -> None:
        """Route one record to the hub (public for tests)."""
        name = self._names.get(record.topic, record.topic)
        self.metrics.consumed.labels(name).inc()
        try:
            if name == T.FEEDBACK.name:
                self._on_message(decode(FeedbackMessage, record.value or b""))
            elif name == T.TRIGGERS.name:
                trigger = decode(TriggerFired, record.value or b"")
                self.hub.publish(BOARD, P.board_outgoing(P.BOARD_TRIGGER, P.board_trigger(trigger)))
            elif name == T.NUDGE_OUTCOMES.name:
                outcome = decode(NudgeOutcome, record.value or b"")
                self.hub.publish(BOARD, P.board_outgoing(P.BOARD_OUTCOME, P.board_outcome(outcome)))
        except SchemaError as exc:
            self.metrics.bad_records.labels(name).inc()
            log.warning(
                "gateway consumer: skipping a bad record on %s [%d@%d]: %s",
                record.topic,
                record.partition,
                record.offset,
                exc,
            )

    def _on_message(self, message: FeedbackMessage) -> None:
        view = P.MessageView.from_record(message)
        self.hub.publish(view.student_key, P.student_outgoing(view))
        if view.origin == "proactive" and view.role == "assistant" and view.trigger_id:
            self.hub.publish(BOARD, P.board_outgoing(P.BOARD_NUDGE, P.board_message(view)))
