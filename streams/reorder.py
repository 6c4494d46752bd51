"""Arrival order is not event order: a student's bounded reorder buffer.

Pure.  The rule (fixtures README §2): an event at most ``window`` seconds
earlier than the latest event time already seen for its student is analysed
in stream order — (time, envelope id, line number), events without an integer
id after those with one at the same time — and the clock that drives
inactivity holds back by the same window.  So an event waits here until no
event that may still arrive can precede it: until its time is strictly
before ``latest - window`` (the student's own events move ``latest``) or
strictly before the held-back clock (:meth:`Reorderer.due`).

An event later than that (older than ``latest - window``, or older than what
was already released or advanced to) is *late*: it is analysed in arrival
order, as if it had happened at the student's latest time (or at the time the
clock already advanced the student to, when that is later), and flagged.

The buffer holds plain JSON values (the adapter's compact form of an event),
so it is stored with the student's state; a window of 0 holds nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

#: Rank of an event with an integer envelope id, then without one, then a late event.
_INT_ID, _OTHER_ID, _LATE = 0, 1, 2
#: The most events a student's buffer holds: past it the oldest is released at once
#: (a flood of events inside one window cannot swell the state).
MAX_HELD = 256


@dataclass(frozen=True, slots=True)
class Held:
    """One buffered event: its ordering key and the adapter's compact form."""

    ts: float
    rank: int
    id_int: int
    line: int
    seq: int
    value: Any
    late: bool = False

    @property
    def key(self) -> tuple[float, int, int, int, int]:
        return (self.ts, self.rank, self.id_int, self.line, self.seq)

    def to_json(self) -> list[Any]:
        return [self.ts, self.rank, self.id_int, self.line, self.seq, self.value, self.late]

    @classmethod
    def from_json(cls, raw: list[Any]) -> Held:
        ts, rank, id_int, line, seq, value, late = raw
        return cls(float(ts), int(rank), int(id_int), int(line), int(seq), value, bool(late))


@dataclass(slots=True)
class Reorderer:
    """A student's reorder buffer (kept in the student's state).

    :ivar latest: the latest event time seen for the student (None before any).
    :ivar floor: what was already released or advanced to: an event before it is late.
    """

    latest: float | None = None
    floor: float = -math.inf
    held: list[Held] = field(default_factory=list)
    seq: int = 0

    def offer(
        self, ts: float, id_int: int | None, line: int | None, value: Any, window: float
    ) -> tuple[bool, list[Held]]:
        """Take one arriving event; returns (late, the events now released in stream order).

        A late event is held at the student's latest time, after every event of that time.
        """
        self.seq += 1
        latest = self.latest
        late = latest is not None and (ts < latest - window or ts < self.floor)
        if late:
            assert latest is not None
            # the student's clock never goes back: at its latest time, or where the clock
            # already took it (an event only the clock overtook, e.g. a recording fed to a
            # live worker, is taken at the clock's time)
            at = max(latest, self.floor)
            held = Held(at, _LATE, 0, 0, self.seq, value, late=True)
            self.latest = at
        else:
            rank = _INT_ID if id_int is not None else _OTHER_ID
            held = Held(ts, rank, id_int or 0, line or 0, self.seq, value)
            self.latest = ts if latest is None else max(latest, ts)
        self._insert(held)
        assert self.latest is not None
        released = self.release_before(self.latest - window)
        if len(self.held) > MAX_HELD:
            released += self._overflow()
        return late, released

    def _overflow(self) -> list[Held]:
        """Release the oldest held events beyond :data:`MAX_HELD` (what arrives before
        them afterwards is late)."""
        out, self.held = self.held[: len(self.held) - MAX_HELD], self.held[len(self.held) - MAX_HELD :]
        self.floor = max(self.floor, out[-1].ts)
        return out

    def release_before(self, clock: float) -> list[Held]:
        """Release every event strictly before ``clock``, in stream order; nothing
        earlier than ``clock`` can be accepted in order afterwards."""
        cut = 0
        while cut < len(self.held) and self.held[cut].ts < clock:
            cut += 1
        out, self.held = self.held[:cut], self.held[cut:]
        self.floor = max(self.floor, clock)
        return out

    def release_all(self) -> list[Held]:
        """Release everything (the input has ended)."""
        out, self.held = self.held, []
        return out

    def due(self, window: float) -> float | None:
        """The clock time after which the oldest held event is released (its time plus the window)."""
        return self.held[0].ts + window if self.held else None

    def _insert(self, held: Held) -> None:
        at = len(self.held)
        while at > 0 and self.held[at - 1].key > held.key:
            at -= 1
        self.held.insert(at, held)

    def to_json(self) -> list[Any] | None:
        """The stored form (None when empty and untouched: nothing to store)."""
        if self.latest is None and not self.held:
            return None
        floor = None if self.floor == -math.inf else self.floor
        return [self.latest, floor, self.seq, [h.to_json() for h in self.held]]

    @classmethod
    def from_json(cls, raw: list[Any] | None) -> Reorderer:
        if not raw:
            return cls()
        latest, floor, seq, held = raw
        return cls(latest, -math.inf if floor is None else float(floor), [Held.from_json(h) for h in held], int(seq))
