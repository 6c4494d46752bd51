"""TableBuffer: a batch's writes reach the table once per key, puts and deletes
separately when asked (the analysis writes deletions last, so any prefix of a
batch's changelog records is a consistent state).  Each write is a record on the
table's changelog topic, on the partition of the event that made it: added to
the batch's outbox (enqueued on the producer when the outbox is sent) or, when
``direct``, enqueued on the producer at once; the local store takes the value
right after."""

from __future__ import annotations

import asyncio
from typing import Any, NamedTuple

import pytest

from streams.agents.batching import BatchContext, PersistedOffsets, TableBuffer
from tests.fakes.producer import RecordingProducer
from topology.seam.outbox import Outbox


class Message(NamedTuple):
    partition: int


class Event:
    def __init__(self, partition: int) -> None:
        self.message = Message(partition)


class Changelog:
    def get_topic_name(self) -> str:
        return "app-students-changelog"


class Store(dict):  # type: ignore[type-arg]
    def __init__(self, ops: list[tuple[Any, ...]], *args: Any) -> None:
        super().__init__(*args)
        self.ops = ops

    def __setitem__(self, key: bytes, value: bytes) -> None:
        self.ops.append(("store put", key))
        super().__setitem__(key, value)

    def __delitem__(self, key: bytes) -> None:
        self.ops.append(("store del", key))
        super().__delitem__(key)


class PersistingStore(Store):
    """Like RocksDB: remembers the changelog offset it holds."""

    persisted: list[tuple[Any, int]]

    def set_persisted_offset(self, tp: Any, offset: int) -> None:
        self.persisted.append((tp, offset))


class Table:
    def __init__(self, store: Store) -> None:
        self.data, self.changelog_topic = store, Changelog()

    def get(self, key: bytes) -> bytes | None:
        value: bytes | None = self.data.get(key)
        return value


def _buffer(store: Store) -> tuple[TableBuffer, BatchContext]:
    def on_record(topic: str, key: bytes | None, value: bytes | None, partition: int | None) -> None:
        store.ops.append(("send", topic, key, value, partition))

    producer = RecordingProducer(on_record)
    context = BatchContext(Outbox(producer))
    return TableBuffer(Table(store), context, producer), context


def test_puts_first_then_deletes_and_one_write_per_key() -> None:
    ops: list[tuple[Any, ...]] = []
    store = Store(ops, {b"old": b"0", b"kept": b"1"})
    buffer, context = _buffer(store)
    context.enter(event := Event(3))
    buffer[b"new"] = b"a"
    del buffer[b"old"]
    buffer[b"new"] = b"b"  # written once, with the last value
    assert buffer.get(b"new") == b"b" and buffer.get(b"old") is None and buffer.get(b"kept") == b"1"
    assert ops == []  # nothing leaves before the flush

    async def flush() -> None:
        assert await buffer.flush(deletes=False) == 1
        assert ops == [("store put", b"new")]  # the record waits in the outbox
        assert await context.outbox.send() == 1
        assert ops[1:] == [("send", "app-students-changelog", b"new", b"b", 3)]
        assert b"old" in store  # the deletion waits
        assert await buffer.flush(direct=True) == 1  # straight to the producer
        assert ops[2:] == [("send", "app-students-changelog", b"old", None, 3), ("store del", b"old")]
        assert await buffer.flush() == 0
        assert await context.outbox.send() == 0

    asyncio.run(flush())
    assert dict(store) == {b"kept": b"1", b"new": b"b"}
    del event


def test_each_write_goes_to_the_partition_of_the_event_that_made_it() -> None:
    ops: list[tuple[Any, ...]] = []
    buffer, context = _buffer(Store(ops))
    first, second = Event(1), Event(6)
    context.enter(first)
    buffer[b"a"] = b"1"
    context.enter(second)
    buffer[b"b"] = b"2"

    async def flush() -> None:
        await buffer.flush()
        await context.outbox.send()

    asyncio.run(flush())
    assert [(op[2], op[4]) for op in ops if op[0] == "send"] == [(b"a", 1), (b"b", 6)]


def test_deleting_a_missing_key_writes_nothing() -> None:
    ops: list[tuple[Any, ...]] = []
    buffer, context = _buffer(Store(ops))
    context.enter(event := Event(0))
    del buffer[b"never"]

    async def flush() -> int:
        written = await buffer.flush()
        await context.outbox.send()
        return written

    assert asyncio.run(flush()) == 1 and ops == []
    del event


@pytest.mark.parametrize("direct", [False, True])
def test_a_persisting_store_records_the_offset_of_each_acknowledged_write(direct: bool) -> None:
    ops: list[tuple[Any, ...]] = []
    store = PersistingStore(ops)
    store.persisted = []
    buffer, context = _buffer(store)
    context.enter(event := Event(2))
    buffer[b"a"] = b"1"
    buffer[b"b"] = b"2"

    async def flush() -> None:
        await buffer.flush(direct=direct)
        await context.outbox.send()
        await asyncio.sleep(0)  # done callbacks run on the next loop iteration

    asyncio.run(flush())
    tp = ("app-students-changelog", 2)
    # the last acknowledged offset is what recovery resumes from: once per record
    # sent directly, once per batch (its last record's offset) through the outbox
    assert store.persisted == ([(tp, 0), (tp, 1)] if direct else [(tp, 1)])
    del event


def test_a_persisting_store_is_never_told_an_older_offset_after_a_newer_one() -> None:
    ops: list[tuple[Any, ...]] = []
    store = PersistingStore(ops)
    store.persisted = []
    persisted = PersistedOffsets(store)
    persisted(("log", 0), 7)
    persisted(("log", 0), 4)  # a batch's acknowledgement arriving after later single records
    persisted(("log", 1), 2)
    persisted(("log", 0), 9)
    assert store.persisted == [(("log", 0), 7), (("log", 1), 2), (("log", 0), 9)]
