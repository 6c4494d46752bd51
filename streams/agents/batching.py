"""Per-batch table writes: each key written once per batch, after the batch's outputs.

Agents take events in small batches (``stream.take_events``).  Outputs are
published as each event is processed; table writes go to a :class:`TableBuffer`
and reach the table — on the partition of the event that made them — only
when the batch is flushed.  So every output is enqueued before the state that
records it as done, and a student with many events in a batch costs one state
write, not one per event.  Reads see the buffered values.

A flush writes each change as Faust's ``table[key] = value`` would — the record
on the table's changelog topic, the value in the local store — but in the
agent's own task, right after the batch's outputs: the record goes to the
batch's :class:`~topology.seam.outbox.Outbox` (enqueued on the producer when
the agent next sends it), or straight to the producer (``direct``).  Faust's
own path queues changelog records for a background task that sends them one
loop iteration at a time, so one batch's state left in dozens of small produce
requests (docs/performance.md, "Pipeline").
"""

from __future__ import annotations

import weakref
from typing import Any

from faust.stores.base import Store
from faust.streams import _current_event

from topology.seam.outbox import Outbox


class BatchContext:
    """The event being processed (whose partition pending writes belong to), and
    the outbox the batch's records go to."""

    def __init__(self, outbox: Outbox) -> None:
        self.event: Any = None
        self.outbox = outbox

    def enter(self, event: Any) -> None:
        """Make ``event`` current for the agent's code and for buffered writes."""
        self.event = event
        _current_event.set(weakref.ref(event))


class TableBuffer:
    """A Faust table seen through one batch's pending writes (bytes keys and values)."""

    def __init__(self, table: Any, context: BatchContext, producer: Any) -> None:
        """``producer``: the Faust producer, for ``direct`` writes."""
        self.table, self.context, self.producer = table, context, producer
        self.pending: dict[bytes, tuple[bytes | None, Any]] = {}
        self.topic = ""
        """The changelog topic (known once the app is set up; taken at the first write)."""
        self.persisted: PersistedOffsets | None = None
        """What tells the store its acknowledged changelog offsets, when it
        remembers the offset it holds (RocksDB; taken at the first write)."""

    def get(self, key: bytes) -> bytes | None:
        if key in self.pending:
            return self.pending[key][0]
        value: bytes | None = self.table.get(key)
        return value

    def __setitem__(self, key: bytes, value: bytes) -> None:
        self.pending[key] = (value, self.context.event)

    def __delitem__(self, key: bytes) -> None:
        self.pending[key] = (None, self.context.event)

    def items(self) -> Any:
        """The table's items (pending writes are not included; flush first)."""
        return self.table.items()

    async def flush(self, *, puts: bool = True, deletes: bool = True, direct: bool = False) -> int:
        """Write the pending values (``puts``) and deletions (``deletes``), in the
        order they were first made, to the outbox (``direct``: to the producer);
        returns how many were flushed."""
        written = 0
        for key, (value, event) in list(self.pending.items()):
            if (puts if value is not None else deletes) is False:
                continue
            if value is not None or self.table.get(key) is not None:
                await self.write(key, value, event, direct=direct)
            del self.pending[key]
            written += 1
        return written

    async def write(self, key: bytes, value: bytes | None, event: Any, *, direct: bool = False) -> None:
        """One change on the partition of the event that made it: its changelog
        record added to the outbox (``direct``: enqueued on the producer), then
        the local store updated (a RocksDB store files the value under the
        current event's partition)."""
        if not self.topic:
            self.topic = self.table.changelog_topic.get_topic_name()
            persists = getattr(type(self.table.data), "set_persisted_offset", _NOT_PERSISTED) is not _NOT_PERSISTED
            self.persisted = PersistedOffsets(self.table.data) if persists else None
        _current_event.set(weakref.ref(event))
        store = self.table.data
        partition = event.message.partition
        persisted = self.persisted  # recovery resumes from the offset the store holds
        if direct:
            sent = await self.producer.send(self.topic, key, value, partition, None, None)
            if persisted is not None:
                sent.add_done_callback(persisted.on_sent)
        else:
            self.context.outbox.add(self.topic, partition, key, value, persisted)
        if value is None:
            del store[key]
        else:
            store[key] = value


_NOT_PERSISTED = Store.set_persisted_offset


class PersistedOffsets:
    """Tells a store (RocksDB) the highest acknowledged changelog offset of each
    partition.  Acknowledgements may arrive out of order — the outbox's own
    batches and the records it appended to a batch already waiting in the
    producer resolve one loop iteration apart — and the store must never be
    told an older offset after a newer one: a restart would replay the
    changelog from there."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.highest: dict[Any, int] = {}

    def __call__(self, tp: Any, offset: int) -> None:
        if offset > self.highest.get(tp, -1):
            self.highest[tp] = offset
            self.store.set_persisted_offset(tp, offset)

    def on_sent(self, sent: Any) -> None:
        """A single record's send future is done."""
        if not sent.cancelled() and sent.exception() is None:
            metadata = sent.result()
            self(metadata.topic_partition, metadata.offset)
