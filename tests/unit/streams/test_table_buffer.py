"""TableBuffer: a batch's writes reach the table once per key, puts and deletes
separately when asked (the analysis writes deletions last, so any prefix of a
batch's changelog records is a consistent state)."""

from __future__ import annotations

from streams.agents.batching import BatchContext, TableBuffer


class Event:
    """Stands for a Faust event (only weak-referenced here)."""


class RecordingTable(dict):  # type: ignore[type-arg]
    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        self.ops: list[tuple[str, bytes]] = []

    def __setitem__(self, key: bytes, value: bytes) -> None:
        self.ops.append(("put", key))
        super().__setitem__(key, value)

    def __delitem__(self, key: bytes) -> None:
        self.ops.append(("del", key))
        super().__delitem__(key)


def _buffer(table: RecordingTable) -> TableBuffer:
    context = BatchContext()
    context.enter(event := Event())
    buffer = TableBuffer(table, context)
    buffer._keep = event  # type: ignore[attr-defined]  # keep the weakly referenced event alive
    return buffer


def test_puts_first_then_deletes_and_one_write_per_key() -> None:
    table = RecordingTable({b"old": b"0", b"kept": b"1"})
    buffer = _buffer(table)
    buffer[b"new"] = b"a"
    del buffer[b"old"]
    buffer[b"new"] = b"b"  # written once, with the last value
    assert buffer.get(b"new") == b"b" and buffer.get(b"old") is None and buffer.get(b"kept") == b"1"

    assert buffer.flush(deletes=False) == 1
    assert table.ops == [("put", b"new")] and b"old" in table  # the deletion waits
    assert buffer.flush() == 1
    assert table.ops == [("put", b"new"), ("del", b"old")]
    assert dict(table) == {b"kept": b"1", b"new": b"b"}
    assert buffer.flush() == 0


def test_deleting_a_missing_key_writes_nothing() -> None:
    table = RecordingTable()
    buffer = _buffer(table)
    del buffer[b"never"]
    assert buffer.flush() == 1 and table.ops == []
