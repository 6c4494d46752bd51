"""The live clock: every owned partition gets a tick on the wall clock.

Every ``TRIGGER_POLL_INTERVAL_S``; with a reorder window, also as soon as a
student of the partition has held events due (checked every
:data:`HELD_CHECK_S`), so a held run is analysed within that much of its window.

Timers cannot write tables, so the timer only *sends* a :class:`ClockTick`
to each partition of ``vex.clock`` this worker owns; the analysis agent that
owns the partition does the work.  In replay mode there is no timer: time
advances with the events, and the replay tool sends the final tick.
"""

from __future__ import annotations

import math
import time

from streams.agents.emit import publish
from streams.agents.pipeline import Pipeline
from topology import topics as T
from topology.schemas import ClockTick

#: How often the live clock looks for students whose held events are due, when a
#: reorder window is set (their release waits at most this long past the window).
HELD_CHECK_S = 0.05


def register(p: Pipeline) -> None:
    if p.settings.clock_mode != "live":
        return
    clock_topic = p.settings.topic(T.CLOCK.name)
    period = p.settings.trigger_poll_interval_s
    held_window = p.settings.reorder_window_s > 0
    last: dict[int, float] = {}

    def due_now(partition: int, now: float) -> bool:
        """The regular tick, or (with a reorder window) a student due before it."""
        if now - last.get(partition, -math.inf) >= period:
            return True
        stream = p.extras.get("stream")
        earliest = stream.analysis.store.index.earliest(partition) if stream is not None else None
        return held_window and earliest is not None and earliest <= now

    @p.app.timer(HELD_CHECK_S if held_window else period)
    async def tick() -> None:
        now = time.time()
        owned = sorted(tp.partition for tp in p.app.consumer.assignment() if tp.topic == clock_topic)
        for partition in owned:
            if due_now(partition, now):
                last[partition] = now
                await publish(p, ClockTick(now=now), None, T.CLOCK, partition=partition)
