"""The live clock: every owned partition gets a tick on the wall clock.

Timers cannot write tables, so the timer only *sends* a :class:`ClockTick`
to each partition of ``vex.clock`` this worker owns; the analysis agent that
owns the partition does the work.  In replay mode there is no timer: time
advances with the events, and the replay tool sends the final tick.
"""

from __future__ import annotations

import time

from streams.agents.emit import publish
from streams.agents.pipeline import Pipeline
from topology import topics as T
from topology.schemas import ClockTick


def register(p: Pipeline) -> None:
    if p.settings.clock_mode != "live":
        return
    clock_topic = p.settings.topic(T.CLOCK.name)

    @p.app.timer(p.settings.trigger_poll_interval_s)
    async def tick() -> None:
        now = time.time()
        owned = sorted(tp.partition for tp in p.app.consumer.assignment() if tp.topic == clock_topic)
        for partition in owned:
            await publish(p, ClockTick(now=now), None, T.CLOCK, partition=partition)
