"""Faust's aiokafka transport with a configurable consumer fetch wait.

Faust's driver fixes the consumer's ``fetch_max_wait_ms`` at 1,500 ms.  The
client keeps one fetch in flight per broker and leaves partitions with unread
records out of it, so a worker catching up stalls for up to that long between
bursts.  This transport (URL scheme ``vexkafka://``) applies
``CONSUMER_FETCH_MAX_WAIT_MS`` instead; everything else is Faust's driver.
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


class Consumer(driver.Consumer):
    def _new_consumer_thread(self) -> ConsumerThread:
        return ConsumerThread(self, loop=self.loop, beacon=self.beacon)


class Transport(driver.Transport):
    Consumer = Consumer


def register() -> None:
    """Make ``vexkafka://`` resolve to :class:`Transport` (idempotent)."""
    drivers.TRANSPORTS.aliases[SCHEME] = f"{__name__}:Transport"
