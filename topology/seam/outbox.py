"""One batch's records, per topic partition, handed to the producer as whole batches.

The stream agent writes about three records per input event: its outputs
(``vex.events``, runs, triggers, episodes, ...) and its tables' changelog
records.  Sent one at a time, each record costs aiokafka a metadata check, a
partition check, a future and, when the broker answers, a ``RecordMetadata``
and a future resolution — about 10 µs of the worker's CPU per record
(docs/performance.md, "Pipeline").  An :class:`Outbox` collects the records
per topic partition and, when the agent says so, hands each partition's
records to the producer as one aiokafka
:class:`~aiokafka.producer.message_accumulator.BatchBuilder` (``send_batch``):
one future per partition and step.

Order.  :meth:`Outbox.send` enqueues every partition's records, in the order
the partitions were first written to, before it returns, and the agent calls
it at each boundary of its write order (outputs, then the state records that
refer to them; see :meth:`streams.agents.stream.Stream.flush`).  The producer
sends with linger 0 and one request in flight per broker, so a record never
leaves before one enqueued earlier.

Never waiting.  ``send_batch`` takes a batch only when the producer holds no
batch of that partition yet; otherwise it waits for that one to leave — a
broker round trip with the agent standing still, which happens whenever the
agent's next batch was ready before the producer's sender ran.  So when a batch
of the partition is still waiting in the producer, the records are appended to
that batch's builder (where a plain ``send`` would put them too, without a
future each), and only what does not fit goes as a new batch.  That reaches
into aiokafka's accumulator (``_message_accumulator._batches``, a batch's
``_builder``), which ``aiokafka==0.14.0`` is pinned for; the tests drive it on
the real broker.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

log = logging.getLogger("vexnudge.outbox")

#: Called with (topic partition, offset of the last record it covers) when the
#: broker acknowledges records of the outbox.
Acked = Callable[[Any, int], None]
#: Called with (topic, records, the error) when the broker refuses a batch (the
#: worker counts them: ``vexnudge_publish_failures_total`` and ``/healthz``).
Failed = Callable[[str, int, BaseException], None]


class _Open:
    """One partition's records of the current step."""

    __slots__ = ("topic", "partition", "on_acked", "records")

    def __init__(self, topic: str, partition: int, on_acked: Acked | None) -> None:
        self.topic, self.partition, self.on_acked = topic, partition, on_acked
        self.records: list[tuple[bytes | None, bytes | None]] = []


class Outbox:
    """Records to send, grouped per (topic, partition), handed over as batches."""

    def __init__(self, producer: Any, on_failed: Failed | None = None) -> None:
        """``producer``: the Faust producer (its aiokafka producer is taken at the
        first hand-over, once the app has started it); ``on_failed``: told of every
        batch the broker refuses (besides the log)."""
        self.producer = producer
        self.on_failed = on_failed
        self.open: dict[tuple[str, int], _Open] = {}
        self.counts: Counter[str] = Counter()
        """Records added per label since the last :meth:`take_counts`."""
        self.sent_batches = 0
        """Batches handed to the producer."""
        self.appended = 0
        """Records appended to a batch already waiting in the producer."""
        self._kafka: Any = None

    def _aiokafka(self) -> Any:
        if self._kafka is None:
            self._kafka = self.producer._ensure_producer()
        return self._kafka

    def add(
        self,
        topic: str,
        partition: int,
        key: bytes | None,
        value: bytes | None,
        on_acked: Acked | None = None,
        label: str | None = None,
    ) -> None:
        """Add one record (``value`` None: a tombstone).  ``on_acked`` (kept per
        partition and step, so the same for all its records) is called with the
        topic partition and the offset of the last record of each batch once
        the broker has it; ``label`` counts the record in :meth:`take_counts`."""
        slot = self.open.get((topic, partition))
        if slot is None:
            slot = self.open[(topic, partition)] = _Open(topic, partition, on_acked)
        slot.records.append((key, value))
        if label is not None:
            self.counts[label] += 1

    async def send(self) -> int:
        """Hand every partition's records to the producer (in the order the
        partitions were first written to); returns how many records that was."""
        records = 0
        while self.open:
            slot = self.open.pop(next(iter(self.open)))
            records += len(slot.records)
            await self._enqueue(slot)
        return records

    def take_counts(self) -> Counter[str]:
        """Records added per label since the last call (for the metrics)."""
        counts, self.counts = self.counts, Counter()
        return counts

    def __len__(self) -> int:
        return sum(len(slot.records) for slot in self.open.values())

    async def _enqueue(self, slot: _Open) -> None:
        kafka = self._aiokafka()
        records, done = slot.records, 0
        waiting = _waiting_batch(kafka, slot.topic, slot.partition)
        if waiting is not None:
            done = self._append(waiting, slot)
        while done < len(records):
            builder, first = kafka.create_batch(), done
            for key, value in records[first:]:
                if builder.append(key=key, value=value, timestamp=None) is None:
                    break
                done += 1
            if done == first:
                size = len(records[first][1] or b"")
                exc = ValueError(
                    f"a record of {size} bytes does not fit in a producer batch for {slot.topic}[{slot.partition}]"
                )
                if self.on_failed is not None:
                    self.on_failed(slot.topic, 1, exc)
                raise exc
            delivered = await kafka.send_batch(builder, slot.topic, partition=slot.partition)
            self.sent_batches += 1
            last = done - first - 1
            delivered.add_done_callback(lambda sent, last=last: _delivered(sent, slot, last, self.on_failed))

    def _append(self, batch: Any, slot: _Open) -> int:
        """Append as many of the slot's records as fit to a waiting producer batch."""
        builder = getattr(batch, "_builder", None)
        if builder is None:
            return 0
        last = None
        appended = 0
        for key, value in slot.records:
            metadata = builder.append(key=key, value=value, timestamp=None)
            if metadata is None:
                break
            last, appended = metadata.offset, appended + 1
        if last is not None:
            self.appended += appended
            batch.future.add_done_callback(
                lambda sent, last=last, n=appended: _delivered(sent, slot, last, self.on_failed, n)
            )
        return appended


def _waiting_batch(kafka: Any, topic: str, partition: int) -> Any:
    """The producer's batch of this partition that its sender has not taken yet."""
    accumulator = getattr(kafka, "_message_accumulator", None)
    batches = getattr(accumulator, "_batches", None)
    pending = batches.get((topic, partition)) if batches else None
    return pending[-1] if pending else None


def _delivered(done: Any, slot: _Open, last: int, on_failed: Failed | None = None, records: int | None = None) -> None:
    """A batch's outcome; ``last``: the relative offset of the slot's last record in it
    (of a new batch: ``last + 1`` records; ``records`` when appended to a waiting one)."""
    if done.cancelled():
        return
    exc = done.exception()
    if exc is not None:
        log.error("delivery of records to %s[%d] failed: %r", slot.topic, slot.partition, exc)
        if on_failed is not None:
            on_failed(slot.topic, last + 1 if records is None else records, exc)
        return
    if slot.on_acked is not None:
        metadata = done.result()
        slot.on_acked(metadata.topic_partition, metadata.offset + last)
