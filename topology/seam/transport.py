"""Faust's aiokafka transport with a configurable consumer fetch wait, a
commit that never skips a record, and no record dropped around a rebalance.

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

After each assignment, Faust's table recovery resumes the stream partitions
while the flow is running and only then seeks them to their committed
offsets.  Records read in between raise the consumer's read offset; the same
records read again after the seek fall below it and are dropped as already
read, though they never reached the agent (seen after a ``kill -9`` restart:
130 records of one partition dropped, the commit stuck until the healer
re-read them).  :class:`SeekGate` holds those partitions until the seek is
done.

Faust hands aiokafka its live set of active partitions as the filter of a
fetch that may wait up to a second.  If every partition is paused meanwhile
(between a table recovery and the stream partitions' resumption) the set is
empty, and aiokafka reads an empty filter as no filter: it returns the paused
partitions' records and moves past them, and Faust drops them as not active.
:class:`ActiveView` keeps the filter on.

Faust's consumer loop races every record's hand-over to the streams against
the flow's suspension with four tasks; :func:`topology.seam.handover.drain` runs the
hand-over inline and races only one that has to wait.

Everything else is Faust's driver.
"""

from __future__ import annotations

import logging
from typing import Any

import aiokafka
from faust.transport import drivers
from faust.transport.drivers import aiokafka as driver

from topology.seam import handover

log = logging.getLogger("vexnudge.transport")
SCHEME = "vexkafka"
#: Attribute of the Faust app that carries the wait (set by the app factory).
APP_ATTRIBUTE = "vexnudge_fetch_max_wait_ms"


class ActiveView:
    """The consumer's set of active partitions as handed to aiokafka's
    ``fetched_records``: membership is read live, as Faust intends, but the
    view is never falsy, because aiokafka reads an empty filter as "every
    partition"."""

    __slots__ = ("tps",)

    def __init__(self, tps: Any) -> None:
        self.tps = tps

    def __bool__(self) -> bool:
        return True

    def __contains__(self, tp: object) -> bool:
        return tp in self.tps


class ConsumerThread(driver.AIOKafkaConsumerThread):
    """The driver's consumer thread, with our fetch wait and a fetch filter
    that an empty set of active partitions cannot turn off."""

    async def _fetch_records(
        self,
        consumer: aiokafka.AIOKafkaConsumer,
        active_partitions: Any,
        timeout: float | None = None,
        max_records: int | None = None,
    ) -> Any:
        view = ActiveView(active_partitions) if active_partitions is not None else None
        return await super()._fetch_records(consumer, view, timeout=timeout, max_records=max_records)  # type: ignore[arg-type]

    def _create_worker_consumer(self, transport: Any) -> aiokafka.AIOKafkaConsumer:
        consumer = super()._create_worker_consumer(transport)
        wait = getattr(self.app, APP_ATTRIBUTE, None)
        if wait is not None:
            consumer._fetch_max_wait_ms = int(wait)  # read by start()
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


class SeekGate:
    """Stream partitions resumed after an assignment wait for the seek that follows.

    Pure bookkeeping for :class:`Consumer`: :meth:`assigned` at each
    assignment; :meth:`resume` says which of the partitions being resumed may
    flow now (changelogs always; stream partitions only once the seek owed
    since the assignment is done); :meth:`sought` after a seek gives the held
    partitions back.
    """

    def __init__(self) -> None:
        self.owed = False
        self.held: set[Any] = set()

    def assigned(self) -> None:
        self.owed, self.held = True, set()

    def revoked(self, tps: set[Any]) -> None:
        self.held -= tps

    def resume(self, tps: set[Any], is_changelog: Any) -> set[Any]:
        """The partitions of ``tps`` to resume now; the others are held."""
        if not self.owed:
            return tps
        hold = {tp for tp in tps if not is_changelog(tp)}
        self.held |= hold
        return tps - hold

    def sought(self) -> set[Any]:
        """After a seek: the held partitions, now free to flow.  A seek with
        nothing held (one before the stream partitions were resumed) leaves the
        debt open for the next."""
        out, self.held = self.held, set()
        if out:
            self.owed = False
        return out


class Consumer(driver.Consumer):
    def _new_consumer_thread(self) -> ConsumerThread:
        return ConsumerThread(self, loop=self.loop, beacon=self.beacon)

    @property
    def seek_gate(self) -> SeekGate:
        gate: SeekGate | None = getattr(self, "_vex_seek_gate", None)
        if gate is None:
            gate = self._vex_seek_gate = SeekGate()
        return gate

    async def on_partitions_assigned(self, assigned: Any, generation_id: int = 0) -> None:
        self.seek_gate.assigned()
        await super().on_partitions_assigned(assigned, generation_id)

    async def on_partitions_revoked(self, revoked: Any) -> None:
        self.seek_gate.revoked(set(revoked))
        await super().on_partitions_revoked(revoked)

    def resume_partitions(self, tps: Any) -> None:
        now = self.seek_gate.resume(set(tps), self._is_changelog_tp)
        if now:
            super().resume_partitions(now)

    async def perform_seek(self) -> None:
        """Faust's seek to the committed offsets, then the held partitions flow
        (also if the seek failed: the commit-gap healer covers that case)."""
        try:
            await super().perform_seek()
        finally:
            held = self.seek_gate.sought()
            if held:
                log.debug("resuming %d stream partitions after their seek", len(held))
                super().resume_partitions(held)

    async def _drain_messages(self, fetcher: Any) -> None:
        await handover.drain(self, fetcher)

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
