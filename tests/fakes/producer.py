"""A recording stand-in for the worker's producer (unit tests of the agents).

It speaks the two interfaces the stream agent uses: Faust's ``send`` (one
record) and, through ``_ensure_producer()``, aiokafka's batch interface
(``create_batch`` / ``send_batch``, what :class:`topology.seam.outbox.Outbox`
uses).  Every record is reported to ``on_record`` in the order it is enqueued
on the producer, which is the order a real producer with linger 0 sends them.
Each record gets the next offset of its topic partition, and the returned
futures resolve as a broker's acknowledgement would.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable
from typing import Any, NamedTuple


class Metadata(NamedTuple):
    """The fields of aiokafka's ``RecordMetadata`` the agents read."""

    topic_partition: tuple[str, int]
    offset: int


class RecordInBatch(NamedTuple):
    """What aiokafka's builder returns for an appended record (its relative offset)."""

    offset: int


class Builder:
    """aiokafka's ``BatchBuilder`` interface: ``append`` until ``capacity`` records."""

    def __init__(self, capacity: int) -> None:
        self.capacity, self.records = capacity, []  # type: list[tuple[bytes | None, bytes | None]]

    def append(self, *, timestamp: Any, key: bytes | None, value: bytes | None) -> RecordInBatch | None:
        """The record's relative offset in the batch, or None when the batch is full."""
        if len(self.records) >= self.capacity:
            return None
        self.records.append((key, value))
        return RecordInBatch(len(self.records) - 1)

    def record_count(self) -> int:
        return len(self.records)


OnRecord = Callable[[str, bytes | None, bytes | None, int | None], None]


class WaitingBatch:
    """A batch the producer holds, not yet taken by its sender (aiokafka's
    ``MessageBatch``: its ``_builder`` and ``future``)."""

    def __init__(self, builder: Builder) -> None:
        self._builder = builder
        self.future: asyncio.Future[Metadata] = asyncio.get_running_loop().create_future()


class Accumulator:
    """aiokafka's accumulator as the outbox looks at it: batches waiting per partition."""

    def __init__(self) -> None:
        self._batches: dict[tuple[str, int], list[WaitingBatch]] = {}


class RecordingProducer:
    """Faust's producer ``send`` plus aiokafka's calls, recording each record."""

    def __init__(self, on_record: OnRecord, batch_capacity: int = 1000) -> None:
        self.on_record, self.batch_capacity = on_record, batch_capacity
        self.offsets: dict[tuple[str, int], int] = defaultdict(int)
        self.batches = 0
        self.batch_log: list[tuple[str, int, int]] = []
        """(topic, partition, records) of each batch handed over."""
        self.kafka = AIOKafkaView(self)

    def _record(self, topic: str, key: bytes | None, value: bytes | None, partition: int | None) -> int:
        self.on_record(topic, key, value, partition)
        tp = (topic, partition or 0)
        offset = self.offsets[tp]
        self.offsets[tp] += 1
        return offset

    @staticmethod
    def _acked(tp: tuple[str, int], offset: int) -> asyncio.Future[Metadata]:
        done: asyncio.Future[Metadata] = asyncio.get_running_loop().create_future()
        done.set_result(Metadata(tp, offset))
        return done

    async def send(
        self, topic: str, key: bytes | None, value: bytes | None, partition: int | None, timestamp: Any, headers: Any
    ) -> asyncio.Future[Metadata]:
        """Faust's ``Producer.send``."""
        offset = self._record(topic, key, value, partition)
        return self._acked((topic, partition or 0), offset)

    def _ensure_producer(self) -> AIOKafkaView:
        return self.kafka


class AIOKafkaView:
    """The aiokafka producer behind it: batches, single sends, the accumulator."""

    def __init__(self, owner: RecordingProducer) -> None:
        self.owner = owner
        self._message_accumulator = Accumulator()

    def create_batch(self) -> Builder:
        return Builder(self.owner.batch_capacity)

    async def send_batch(self, batch: Builder, topic: str, *, partition: int) -> asyncio.Future[Metadata]:
        owner = self.owner
        owner.batches += 1
        owner.batch_log.append((topic, partition, batch.record_count()))
        waiting = self._message_accumulator._batches.get((topic, partition))
        if waiting:  # aiokafka would wait for those to leave first: this one goes after them
            behind = WaitingBatch(batch)
            waiting.append(behind)
            return behind.future
        offsets = [owner._record(topic, key, value, partition) for key, value in batch.records]
        return owner._acked((topic, partition), offsets[0])

    def hold(self, topic: str, partition: int, records: int = 1, capacity: int | None = None) -> WaitingBatch:
        """Make the producer hold a batch of ``records`` records for the partition."""
        builder = Builder(self.owner.batch_capacity if capacity is None else capacity)
        for i in range(records):
            builder.append(key=f"held{i}".encode(), value=b"", timestamp=None)
        batch = WaitingBatch(builder)
        self._message_accumulator._batches.setdefault((topic, partition), []).append(batch)
        return batch

    def release(self, topic: str, partition: int) -> None:
        """The sender takes the partition's waiting batches: their records are sent."""
        for batch in self._message_accumulator._batches.pop((topic, partition), []):
            offsets = [self.owner._record(topic, key, value, partition) for key, value in batch._builder.records]
            batch.future.set_result(Metadata((topic, partition), offsets[0]))

    async def send(
        self, topic: str, value: bytes | None = None, key: bytes | None = None, partition: int | None = None
    ) -> asyncio.Future[Metadata]:
        """aiokafka's ``send`` (a single record)."""
        offset = self.owner._record(topic, key, value, partition)
        return self.owner._acked((topic, partition or 0), offset)
