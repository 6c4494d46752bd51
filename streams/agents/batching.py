"""Per-batch table writes: each key written once per batch, after the batch's outputs.

Agents take events in small batches (``stream.take_events``).  Outputs are
published as each event is processed; table writes go to a :class:`TableBuffer`
and reach the table — with the partition of the event that made them — only
when the batch is flushed.  So every output is enqueued before the state that
records it as done, and a student with many events in a batch costs one state
write, not one per event.  Reads see the buffered values.
"""

from __future__ import annotations

import weakref
from typing import Any

from faust.streams import _current_event


class BatchContext:
    """The event being processed (whose partition pending writes belong to)."""

    def __init__(self) -> None:
        self.event: Any = None

    def enter(self, event: Any) -> None:
        """Make ``event`` current for the agent's code and for buffered writes."""
        self.event = event
        _current_event.set(weakref.ref(event))


class TableBuffer:
    """A Faust table seen through one batch's pending writes (bytes keys and values)."""

    def __init__(self, table: Any, context: BatchContext) -> None:
        self.table, self.context = table, context
        self.pending: dict[bytes, tuple[bytes | None, Any]] = {}

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

    def flush(self, *, puts: bool = True, deletes: bool = True) -> int:
        """Write the pending values (``puts``) and deletions (``deletes``) to the
        table, in the order they were first made; returns how many."""
        written = 0
        for key, (value, event) in list(self.pending.items()):
            if (puts if value is not None else deletes) is False:
                continue
            _current_event.set(weakref.ref(event))
            if value is not None:
                self.table[key] = value
            elif self.table.get(key) is not None:
                del self.table[key]
            del self.pending[key]
            written += 1
        return written

    def discard(self) -> None:
        """Forget the pending writes (the batch failed as a whole)."""
        self.pending.clear()
