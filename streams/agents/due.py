"""When each student of this worker next needs a clock advance (a cache).

Per partition, a heap of (due time, student) with lazy deletion.  Rebuilt
from the table for a partition the first time it is needed after a
rebalance; never the source of truth.
"""

from __future__ import annotations

import heapq


class DueIndex:
    """Students by the time their state next changes without an event."""

    def __init__(self) -> None:
        self.due: dict[str, tuple[int, float | None]] = {}
        self.heaps: dict[int, list[tuple[float, str]]] = {}
        self.loaded: set[int] = set()

    def reset(self) -> None:
        """Forget everything (after a rebalance)."""
        self.due.clear()
        self.heaps.clear()
        self.loaded.clear()

    def set(self, student: str, partition: int, due: float | None) -> None:
        """Record ``student``'s next due time (None: nothing pending)."""
        self.due[student] = (partition, due)
        if due is not None:
            heapq.heappush(self.heaps.setdefault(partition, []), (due, student))

    def discard(self, student: str) -> None:
        self.due.pop(student, None)

    def students_due(self, partition: int, now: float, final: bool = False) -> list[str]:
        """Students of ``partition`` due at or before ``now`` (all of them when final).

        Returned students leave the heap; the caller re-``set``s them.
        """
        if final:
            self.heaps.pop(partition, None)
            return sorted(s for s, (p, _) in self.due.items() if p == partition)
        heap, out = self.heaps.get(partition, []), []
        while heap and heap[0][0] <= now:
            due, student = heapq.heappop(heap)
            if self.due.get(student) == (partition, due) and student not in out:
                out.append(student)
        return out

    def earliest(self, partition: int) -> float | None:
        """The earliest due time recorded for ``partition`` (possibly of an entry
        since replaced: an early answer costs one needless tick, never a late one)."""
        heap = self.heaps.get(partition)
        return heap[0][0] if heap else None

    def __len__(self) -> int:
        return len(self.due)
