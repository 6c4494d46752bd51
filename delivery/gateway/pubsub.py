"""In-process fan-out from the gateway's Kafka consumer to open SSE streams.

One :class:`Hub` per gateway process.  The consumer calls :meth:`Hub.publish`
with a topic key (a student key, or :data:`BOARD` for the teacher board);
every subscriber of that key gets the item on its own bounded queue.

Invariants:
- publishing never blocks and never awaits: the consumer loop must not be
  slowed by any client;
- a subscriber whose queue is full is *dropped*: it is marked and woken
  with ``None``, its stream ends with a log line, and the client reconnects (students with
  Last-Event-ID, so nothing is lost);
- subscribing is synchronous, so a stream can subscribe before it replays
  from Postgres and miss nothing published in between.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

#: The key the teacher board subscribes to.
BOARD = "\x00board"

T = TypeVar("T")


@dataclass(eq=False)
class Subscription(Generic[T]):
    """One open stream's inbox."""

    key: str
    queue: asyncio.Queue[T | None]
    label: str = ""
    kind: str = "student"
    dropped: asyncio.Event = field(default_factory=asyncio.Event)
    on_drop: Callable[[], None] | None = None
    """Set by the stream: ends its connection at once (a blocked write included)."""

    @property
    def is_dropped(self) -> bool:
        return self.dropped.is_set()

    def interrupt(self) -> None:
        """Wake the stream's reader with ``None`` (waiting items are discarded)."""
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put_nowait(None)


class Hub(Generic[T]):
    """Per-key sets of bounded subscriber queues.

    :param queue_size: items a subscriber may have waiting before it is dropped.
    :param on_drop: called once per dropped subscriber (metrics).
    """

    def __init__(self, queue_size: int, on_drop: Callable[[Subscription[T]], None] | None = None) -> None:
        if queue_size < 1:
            raise ValueError("queue_size must be at least 1")
        self.queue_size = queue_size
        self._subs: dict[str, set[Subscription[T]]] = {}
        self._on_drop = on_drop

    def subscribe(self, key: str, label: str = "", kind: str = "student") -> Subscription[T]:
        """A new inbox for ``key``; unsubscribe it when the stream ends."""
        sub: Subscription[T] = Subscription(key, asyncio.Queue(self.queue_size), label, kind)
        self._subs.setdefault(key, set()).add(sub)
        return sub

    def unsubscribe(self, sub: Subscription[T]) -> None:
        """Forget ``sub`` (idempotent)."""
        subs = self._subs.get(sub.key)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[sub.key]

    def publish(self, key: str, item: T) -> int:
        """Offer ``item`` to every subscriber of ``key``; returns how many got it."""
        delivered = 0
        for sub in tuple(self._subs.get(key, ())):
            if sub.is_dropped:
                continue
            if sub.queue.qsize() >= self.queue_size:
                self._drop(sub)
                continue
            sub.queue.put_nowait(item)
            delivered += 1
        return delivered

    def _drop(self, sub: Subscription[T]) -> None:
        sub.dropped.set()
        self.unsubscribe(sub)
        sub.interrupt()
        if sub.on_drop is not None:
            sub.on_drop()
        log.warning(
            "dropping slow SSE client %s: %d items waiting (queue full); it will reconnect and resume",
            sub.label or "?",
            self.queue_size,
        )
        if self._on_drop is not None:
            self._on_drop(sub)

    def count(self, key: str | None = None) -> int:
        """Open subscriptions (of ``key``, or all)."""
        if key is not None:
            return len(self._subs.get(key, ()))
        return sum(len(s) for s in self._subs.values())
