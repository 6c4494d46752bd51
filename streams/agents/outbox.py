"""One batch's records, per topic partition, handed to the producer as whole batches.

The stream agent writes about three records per input event: its outputs
(``vex.events``, runs, triggers, episodes, ...) and its tables' changelog
records.  Sent one at a time, each record costs aiokafka a metadata check, a
partition check, a future and, when the broker answers, a ``RecordMetadata``
and a future resolution — about 10 µs of the worker's CPU per record
(docs/performance.md, "Pipeline").  An :class:`Outbox` appends records to
aiokafka's public :class:`~aiokafka.producer.message_accumulator.BatchBuilder`,
one per topic partition, and hands the builders to the producer
(``send_batch``) when the agent says so: one future per builder.

Order.  :meth:`Outbox.send` enqueues every open builder, in the order each was
opened, before it returns, and the agent calls it at each boundary of its
write order (outputs, then the state records that refer to them; see
:meth:`streams.agents.stream.Stream.flush`).  A builder that fills up is
enqueued at once; that only moves records of the current step earlier.  The
producer sends with linger 0 and one request in flight per broker, so a
record never leaves before one enqueued earlier.

Never waiting.  The producer takes a whole batch only when it holds no batch
of that partition yet (``send_batch`` would wait for that one to leave, a
broker round trip while the agent stands still).  Then the records go one by
one instead, appended to the batch already waiting — which is also where
they would have gone sent one at a time — and the agent goes on.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

log = logging.getLogger("vexnudge.outbox")

#: Called with (partition's last offset) when a builder's records are acknowledged.
Acked = Callable[[Any, int], None]


class _Open:
    """One open builder and what to do once it is delivered."""

    __slots__ = ("builder", "topic", "partition", "on_acked", "records")

    def __init__(self, builder: Any, topic: str, partition: int, on_acked: Acked | None) -> None:
        self.builder, self.topic, self.partition, self.on_acked = builder, topic, partition, on_acked
        self.records: list[tuple[bytes | None, bytes | None]] = []
        """The builder's records, for when they must go one by one."""


class Outbox:
    """Records to send, grouped per (topic, partition) in aiokafka batch builders."""

    def __init__(self, producer: Any) -> None:
        """``producer``: the Faust producer (its aiokafka producer is taken at the
        first record, once the app has started it)."""
        self.producer = producer
        self.open: dict[tuple[str, int], _Open] = {}
        self.counts: Counter[str] = Counter()
        """Records added per logical topic since the last :meth:`take_counts`."""
        self.sent_batches = 0
        self.sent_singly = 0
        """Records that went one by one (their partition had a batch waiting)."""
        self._kafka: Any = None

    def _aiokafka(self) -> Any:
        if self._kafka is None:
            self._kafka = self.producer._ensure_producer()
        return self._kafka

    async def add(self, topic: str, partition: int, key: bytes | None, value: bytes | None,
                  on_acked: Acked | None = None, label: str | None = None) -> None:
        """Append one record (``value`` None: a tombstone).  ``on_acked`` (kept per
        builder, so the same for every record of a topic partition) is called with
        the topic partition and the offset of the builder's last record once the
        broker has them; ``label`` counts the record in :meth:`take_counts`."""
        slot = self.open.get((topic, partition))
        if slot is None:
            slot = self.open[(topic, partition)] = _Open(self._aiokafka().create_batch(), topic, partition,
                                                         on_acked)
        if slot.builder.append(key=key, value=value, timestamp=None) is None:
            # full: enqueue it now (its records only leave earlier) and open another
            del self.open[(topic, partition)]
            await self._enqueue(slot)
            slot = self.open[(topic, partition)] = _Open(self._aiokafka().create_batch(), topic, partition,
                                                         on_acked)
            if slot.builder.append(key=key, value=value, timestamp=None) is None:
                raise ValueError(f"a record of {len(value or b'')} bytes does not fit in a producer batch "
                                 f"for {topic}[{partition}]")
        slot.records.append((key, value))
        if label is not None:
            self.counts[label] += 1

    async def send(self) -> int:
        """Enqueue every open builder on the producer (in the order they were
        opened); returns how many records that was."""
        records = 0
        while self.open:
            key = next(iter(self.open))
            slot = self.open.pop(key)
            records += slot.builder.record_count()
            await self._enqueue(slot)
        return records

    def take_counts(self) -> Counter[str]:
        """Records added per label since the last call (for the metrics)."""
        counts, self.counts = self.counts, Counter()
        return counts

    async def _enqueue(self, slot: _Open) -> None:
        count = slot.builder.record_count()
        if count == 0:
            return
        kafka = self._aiokafka()
        if self._waiting(kafka, slot):
            await self._one_by_one(kafka, slot)
            return
        delivered = await kafka.send_batch(slot.builder, slot.topic, partition=slot.partition)
        self.sent_batches += 1
        delivered.add_done_callback(lambda done: _delivered(done, slot, count))

    @staticmethod
    def _waiting(kafka: Any, slot: _Open) -> bool:
        """Whether the producer holds a batch of this partition not yet sent."""
        accumulator = getattr(kafka, "_message_accumulator", None)
        batches = getattr(accumulator, "_batches", None)
        return bool(batches and batches.get((slot.topic, slot.partition)))

    async def _one_by_one(self, kafka: Any, slot: _Open) -> None:
        last = None
        for key, value in slot.records:
            last = await kafka.send(slot.topic, value, key=key, partition=slot.partition)
        self.sent_singly += len(slot.records)
        if last is not None:
            last.add_done_callback(lambda done: _delivered(done, slot, 1))

    def __len__(self) -> int:
        return sum(slot.builder.record_count() for slot in self.open.values())


def _delivered(done: Any, slot: _Open, count: int) -> None:
    if done.cancelled():
        return
    exc = done.exception()
    if exc is not None:
        log.error("delivery of %d records to %s[%d] failed: %r", count, slot.topic, slot.partition, exc)
        return
    if slot.on_acked is not None:
        metadata = done.result()
        slot.on_acked(metadata.topic_partition, metadata.offset + count - 1)
