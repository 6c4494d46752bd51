"""The gateway's limits: stream caps and the question rate limit.

- :class:`StreamSlots`: at most ``per_key`` open streams per key (a student, or
  one board token) and ``total`` per process.  A key at its cap gets a new
  stream by evicting its *oldest* one (the tab left open yesterday goes, the
  tab just opened stays); a process at its total refuses new streams
  (:class:`StreamsFull`, answered 503 with Retry-After) unless the key's own
  eviction frees the slot.  Slots are taken before the response starts, so a
  refusal is a plain HTTP answer.
- :class:`QuestionLimiter`: per-student moving windows (``limits`` notation,
  e.g. ``5/minute;30/hour``), in memory per gateway process.  A refused
  question consumes nothing; the answer says how long until one more fits.

Both are per process: N replicas admit up to N times as much in total (the
pending-question cap, counted in PostgreSQL, holds across replicas).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from limits import parse_many
from limits.aio.storage import MemoryStorage
from limits.aio.strategies import MovingWindowRateLimiter

from delivery.gateway.sse import OpenStream


class StreamsFull(Exception):
    """The process holds its maximum of open streams."""


@dataclass(eq=False)
class Slot:
    """One admitted stream; evicting it closes its stream (now or once attached)."""

    key: str
    stream: OpenStream | None = None
    evicted: bool = False

    def attach(self, stream: OpenStream) -> None:
        self.stream = stream
        if self.evicted:
            stream.close()

    def evict(self) -> None:
        self.evicted = True
        if self.stream is not None:
            self.stream.close()


class StreamSlots:
    """Per-key and total caps on open streams (oldest of a key evicted first)."""

    def __init__(self, per_key: int, total: int, on_evict: Callable[[Slot], None] | None = None) -> None:
        if per_key < 1 or total < 1:
            raise ValueError("stream caps must be at least 1")
        self.per_key, self.total = per_key, total
        self._held: dict[str, deque[Slot]] = {}
        self._count = 0
        self._on_evict = on_evict

    def __len__(self) -> int:
        return self._count

    def held(self, key: str) -> int:
        """Open streams of ``key``."""
        return len(self._held.get(key, ()))

    def take(self, key: str) -> Slot:
        """A slot for a new stream of ``key``.

        :raises StreamsFull: the process is full and ``key`` has nothing to give up.
        """
        held = self._held.get(key)
        if held is not None and len(held) >= self.per_key:
            while len(held) >= self.per_key:
                self._evict(held.popleft())
        elif self._count >= self.total:
            raise StreamsFull(f"{self._count} streams open (SSE_MAX_STREAMS={self.total})")
        slot = Slot(key)
        self._held.setdefault(key, deque()).append(slot)
        self._count += 1
        return slot

    def give_back(self, slot: Slot) -> None:
        """The slot's stream ended (idempotent; an evicted slot was already given back)."""
        held = self._held.get(slot.key)
        if held is None or slot not in held:
            return
        held.remove(slot)
        self._count -= 1
        if not held:
            del self._held[slot.key]

    def _evict(self, slot: Slot) -> None:
        self._count -= 1
        slot.evict()
        if self._on_evict is not None:
            self._on_evict(slot)


class QuestionLimiter:
    """Per-student question rate limit (moving windows, in memory).

    :param notation: ``limits`` rate notation; ``;`` joins several windows.
    :param clock: epoch seconds, only for the Retry-After arithmetic (the
        windows themselves run on ``limits``' own clock).
    """

    def __init__(self, notation: str, clock: Callable[[], float] = time.time) -> None:
        self._items = parse_many(notation)
        self._limiter = MovingWindowRateLimiter(MemoryStorage())
        self._clock = clock

    async def take(self, key: str) -> float | None:
        """Count one question of ``key``: ``None`` when allowed, else seconds to wait."""
        for item in self._items:
            if not await self._limiter.test(item, key):
                return await self._wait(item, key)
        for item in self._items:
            if not await self._limiter.hit(item, key):  # a concurrent request took the last one
                return await self._wait(item, key)
        return None

    async def _wait(self, item: object, key: str) -> float:
        stats = await self._limiter.get_window_stats(item, key)  # type: ignore[arg-type]
        return float(max(1, math.ceil(stats.reset_time - self._clock())))
