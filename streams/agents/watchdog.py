"""Commit-gap healing: re-read a partition whose commit cannot advance.

Faust commits a partition only up to the first offset its stream has not
acknowledged (``topology/seam/transport.py`` makes that hold for a single missing
record too).  A record fetched just as a rebalance suspends the flow can be
marked read without ever reaching the agent (a race in the consumer's fetch
loop), leaving a hole that blocks every later commit of that partition: the
worker keeps processing, but a restart would redo everything since; when the
lost records are the partition's last, they are not processed at all until
more input arrives.  This timer notices a hole or a lost tail that persists
across two checks and seeks the partition back to its committed offset, so the
missing records are delivered again.
Every stage is idempotent on re-delivery (raw-offset guards, derived ids), so
re-reading is always safe.
"""

from __future__ import annotations

import logging

from faust.types import TP, ConsumerT

from streams.agents.pipeline import Pipeline
from topology import topics as T
from topology.seam.offsets import partition_offsets
from topology.seam.transport import covered

log = logging.getLogger("vexnudge.watchdog")
CHECK_INTERVAL_S = 5.0


def stuck_partitions(consumer: ConsumerT, topics: set[str]) -> dict[TP, int]:
    """Assigned partitions of ``topics`` (the agents' inputs, not the table
    changelogs) whose commit cannot advance, with their committed offset.

    * A hole: the lowest acknowledged offset is above the committed one, so a
      record in between was read but never delivered (offsets the log itself
      lacks, which Faust records as gaps, do not count).
    * A lost tail: the partition has records beyond its committed offset, yet
      none is in flight or acknowledged: the last records read never reached
      the agent, and no later record will show the hole (the input ended).
      Paused partitions (a table recovery in progress) are left alone.
    """
    out: dict[TP, int] = {}
    for tp, now in partition_offsets(consumer).items():
        if tp.topic not in topics:
            continue
        offset = now.committed
        if now.acked:
            lowest = min(now.acked)
            if offset is not None and lowest > offset and not covered(now.gaps, offset, lowest):
                out[tp] = offset
        elif not now.in_flight and not now.paused and _highwater(consumer, tp) > (offset or 0):
            out[tp] = offset or 0
    return out


def _highwater(consumer: ConsumerT, tp: TP) -> int:
    """The partition's end offset as last fetched (0 if unknown or no longer ours)."""
    try:
        return consumer.highwater(tp) or 0
    except Exception:  # noqa: BLE001 - the partition moved between the two calls
        return 0


def register(p: Pipeline) -> None:
    suspects: dict[TP, int] = {}
    topics = {p.settings.topic(spec.name) for spec in T.ALL_TOPICS}

    @p.app.timer(CHECK_INTERVAL_S)
    async def heal_commit_gaps() -> None:
        consumer = p.app.consumer
        try:
            now = stuck_partitions(consumer, topics)
            for tp, offset in now.items():
                if suspects.get(tp) == offset:
                    log.warning("commit of %s stuck at %d behind unacknowledged records: re-reading", tp, offset)
                    p.metrics.commit_gaps_healed.inc()
                    await consumer.seek(tp, offset)
        except Exception:
            log.exception("commit-gap check failed; checking again in %.0f s", CHECK_INTERVAL_S)
            now = {}
        suspects.clear()
        suspects.update(now)
