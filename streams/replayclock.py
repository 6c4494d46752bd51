"""The replay clock: in replay mode, event time is the clock that drives inactivity.

Per partition, a *watermark*: the latest event time seen on that partition.
While a partition's input is in time order, each event moves its watermark
and the partition's students whose next change falls due at or before it are
advanced to it (exclusive: an alert exactly at the watermark waits, as the
student whose event it is may still answer at that very second).

The disorder rule: an event more than :data:`DISORDER_S` behind its
partition's watermark switches that partition to per-student time for good
(until :meth:`ReplayClock.reset`): from then on its students advance only by
their own events and the final tick, so out-of-order input cannot fire
spurious alerts.  The watermark itself still rises.

Pure and deterministic: the worker (:mod:`streams.agents.analysis`) and the
in-process replay (:mod:`streams.local`) both follow it, so the rule exists once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: How far behind its partition's watermark an event may be before replay mode
#: stops advancing that partition's students by the watermark (seconds).
DISORDER_S: Final = 60.0


@dataclass(frozen=True, slots=True)
class Step:
    """What one event did to its partition's clock."""

    mark: float
    """The partition's watermark after the event."""
    raised: bool
    """The event raised the watermark."""
    follow: bool
    """Advance the partition's due students to :attr:`mark` (its input is in time order)."""
    disordered: bool
    """This very event switched the partition to per-student time."""


class ReplayClock:
    """Per-partition watermarks and the disorder rule."""

    __slots__ = ("disorder_s", "_marks", "_disordered")

    def __init__(self, disorder_s: float = DISORDER_S) -> None:
        self.disorder_s = disorder_s
        self._marks: dict[int, float] = {}
        self._disordered: set[int] = set()

    def knows(self, partition: int) -> bool:
        """True once the partition has a watermark (seen or started since the last reset)."""
        return partition in self._marks

    def start(self, partition: int, mark: float) -> None:
        """Start a partition from a stored watermark (before its first event since the last reset)."""
        self._marks[partition] = mark

    def mark(self, partition: int) -> float | None:
        """The partition's watermark, None before its first event."""
        return self._marks.get(partition)

    def is_disordered(self, partition: int) -> bool:
        """True when the partition follows per-student time."""
        return partition in self._disordered

    def observe(self, partition: int, ts: float) -> Step:
        """One event of ``partition`` at event time ``ts``.

        :returns: the partition's new watermark, whether ``ts`` raised it, and
            whether the partition's students follow it.
        """
        mark = self._marks.get(partition, ts)
        raised = ts > mark
        if raised:
            mark = ts
        self._marks[partition] = mark
        if partition in self._disordered:
            return Step(mark, raised, follow=False, disordered=False)
        if ts < mark - self.disorder_s:
            self._disordered.add(partition)
            return Step(mark, raised, follow=False, disordered=True)
        return Step(mark, raised, follow=True, disordered=False)

    def reset(self) -> None:
        """Forget every partition (after a rebalance: the worker re-learns them)."""
        self._marks.clear()
        self._disordered.clear()
