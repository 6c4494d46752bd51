"""Faust's aiokafka transport with a configurable consumer fetch wait and a
commit that never skips a record.

Faust's driver fixes the consumer's ``fetch_max_wait_ms`` at 1,500 ms.  The
client keeps one fetch in flight per broker and leaves partitions with unread
records out of it, so a worker catching up stalls for up to that long between
bursts.  This transport (URL scheme ``vexkafka://``) applies
``CONSUMER_FETCH_MAX_WAIT_MS`` instead.

Faust commits a partition up to the first record its stream has not
acknowledged, but its check for a record missing just above the committed
offset is off by one: a single record that was read and never acknowledged
(one lost in the consumer's hand-over at a rebalance) is committed over and
never processed.  :meth:`Consumer._new_offset` holds the commit there instead;
the commit-gap healer (``streams/agents/watchdog.py``) then reads it again.
Everything else is Faust's driver.
"""

from __future__ import annotations

from typing import Any

import aiokafka
from faust.transport import drivers
from faust.transport.drivers import aiokafka as driver

SCHEME = "vexkafka"
#: Attribute of the Faust app that carries the wait (set by the app factory).
APP_ATTRIBUTE = "vexnudge_fetch_max_wait_ms"


class ConsumerThread(driver.AIOKafkaConsumerThread):
    """The driver's consumer thread, with our fetch wait."""

    def _create_worker_consumer(self, transport: Any) -> aiokafka.AIOKafkaConsumer:
        consumer = super()._create_worker_consumer(transport)
        wait = getattr(self.app, APP_ATTRIBUTE, None)
        if wait is not None:
            consumer._fetch_max_wait_ms = int(wait)  # noqa: SLF001 - read by start()
        return consumer


def covered(gaps: Any, start: int, end: int) -> bool:
    """Whether every offset in ``[start, end)`` lies in one of ``gaps`` (an
    interval tree of offsets the log itself does not have, kept by Faust)."""
    if start >= end:
        return True
    if not gaps:
        return False
    position = start
    for interval in sorted(gaps.overlap(start, end), key=lambda i: i.begin):
        if interval.begin > position:
            return False
        position = max(position, interval.end)
    return position >= end


class Consumer(driver.Consumer):
    def _new_consumer_thread(self) -> ConsumerThread:
        return ConsumerThread(self, loop=self.loop, beacon=self.beacon)

    def _new_offset(self, tp: Any) -> int | None:
        """The offset to commit for ``tp``, or None while a record between the
        committed offset and the lowest acknowledged one is missing."""
        committed = self._committed_offset[tp]
        acked = self._acked[tp]
        if acked and committed is not None:
            lowest = min(acked)
            if lowest > committed and not covered(self._gap[tp], committed, lowest):
                return None
        offset: int | None = super()._new_offset(tp)
        return offset


class Transport(driver.Transport):
    Consumer = Consumer


def register() -> None:
    """Make ``vexkafka://`` resolve to :class:`Transport` (idempotent)."""
    drivers.TRANSPORTS.aliases[SCHEME] = f"{__name__}:Transport"
