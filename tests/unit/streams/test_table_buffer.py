"""TableBuffer: a batch's writes reach the table once per key, puts and deletes
separately when asked (the analysis writes deletions last, so any prefix of a
batch's changelog records is a consistent state).  Each write is a record on the
table's changelog topic, on the partition of the event that made it, enqueued
on the producer before the local store takes the value."""

from __future__ import annotations

import asyncio
from typing import Any, NamedTuple

from streams.agents.batching import BatchContext, TableBuffer


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


class Metadata(NamedTuple):
    topic_partition: tuple[str, int]
    offset: int


class Producer:
    def __init__(self, ops: list[tuple[Any, ...]]) -> None:
        self.ops = ops

    async def send(self, topic: str, key: bytes | None, value: bytes | None, partition: int | None,
                   timestamp: Any, headers: Any) -> asyncio.Future[Metadata]:
        self.ops.append(("send", topic, key, value, partition))
        sent: asyncio.Future[Metadata] = asyncio.get_running_loop().create_future()
        sent.set_result(Metadata((topic, partition or 0), len(self.ops)))
        return sent


def _buffer(store: Store) -> tuple[TableBuffer, BatchContext]:
    context = BatchContext()
    return TableBuffer(Table(store), context, Producer(store.ops)), context


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
        assert ops == [("send", "app-students-changelog", b"new", b"b", 3), ("store put", b"new")]
        assert b"old" in store  # the deletion waits
        assert await buffer.flush() == 1
        assert ops[2:] == [("send", "app-students-changelog", b"old", None, 3), ("store del", b"old")]
        assert await buffer.flush() == 0

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
    asyncio.run(buffer.flush())
    assert [(op[2], op[4]) for op in ops if op[0] == "send"] == [(b"a", 1), (b"b", 6)]


def test_deleting_a_missing_key_writes_nothing() -> None:
    ops: list[tuple[Any, ...]] = []
    buffer, context = _buffer(Store(ops))
    context.enter(event := Event(0))
    del buffer[b"never"]
    assert asyncio.run(buffer.flush()) == 1 and ops == []
    del event


def test_a_persisting_store_records_the_offset_of_each_acknowledged_write() -> None:
    ops: list[tuple[Any, ...]] = []
    store = PersistingStore(ops)
    store.persisted = []
    buffer, context = _buffer(store)
    context.enter(event := Event(2))
    buffer[b"a"] = b"1"

    async def flush() -> None:
        await buffer.flush()
        await asyncio.sleep(0)  # done callbacks run on the next loop iteration

    asyncio.run(flush())
    assert store.persisted == [(("app-students-changelog", 2), 1)]
    del event
