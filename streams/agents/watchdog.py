"""Commit-gap healing: re-read a partition whose commit cannot advance.

Faust commits a partition only up to the first offset its stream has not
acknowledged.  A record fetched just as a rebalance suspends the flow can be
marked read without ever reaching the agent (a race in the consumer's fetch
loop), leaving a hole that blocks every later commit of that partition: the
worker keeps processing, but a restart would redo everything since.  This
timer notices a hole that persists across two checks and seeks the partition
back to its committed offset, so the missing records are delivered again.
Every stage is idempotent on re-delivery (raw-offset guards, derived ids), so
re-reading is always safe.
"""

from __future__ import annotations

import logging

from topology.app import Pipeline

log = logging.getLogger("vexnudge.watchdog")
CHECK_INTERVAL_S = 5.0


def stuck_partitions(consumer: object) -> dict[object, int]:
    """Partitions whose oldest unacknowledged record sits below acked ones."""
    out = {}
    acked_lists = consumer._acked  # type: ignore[attr-defined]  # noqa: SLF001
    committed = consumer._committed_offset  # type: ignore[attr-defined]  # noqa: SLF001
    for tp, acked in list(acked_lists.items()):
        offset = committed.get(tp)
        if acked and offset and min(acked) - offset > 1:
            out[tp] = offset
    return out


def register(p: Pipeline) -> None:
    suspects: dict[object, int] = {}

    @p.app.timer(CHECK_INTERVAL_S)
    async def heal_commit_gaps() -> None:
        consumer = p.app.consumer
        now = stuck_partitions(consumer)
        for tp, offset in now.items():
            if suspects.get(tp) == offset:
                log.warning("commit of %s stuck at %d behind unacknowledged records: re-reading", tp, offset)
                p.metrics.commit_gaps_healed.inc()
                await consumer.seek(tp, offset)
        suspects.clear()
        suspects.update(now)
