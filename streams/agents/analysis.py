"""Analysis: per-student state in tables, outputs on the analysis topics.

The handlers of the stream agent (:mod:`streams.agents.stream`) for accepted
events, clock ticks and questions.  For each event it loads the student's
state, runs the pure engine, publishes the outputs, then saves the state with
the raw offset it applied (:class:`~streams.agents.store.StudentStore`, which
writes it after the batch's outputs): a re-delivered record (after a crash)
finds its offset already applied and is skipped, while records the crash lost
are simply recomputed — outputs carry ids derived from their inputs, so
consumers drop duplicates.

Time: live mode advances students on wall-clock ticks; replay mode advances
them with event time — each event also moves its partition's watermark
(:class:`~streams.replayclock.ReplayClock`), and while the partition's input
is in time order, its students whose alerts fall due before it are advanced.
"""

from __future__ import annotations

import logging
import time

from feedback.nudge import NudgeConfig
from streams.agents.batching import BatchContext
from streams.agents.emit import publish
from streams.agents.pipeline import Pipeline
from streams.agents.store import StudentStore
from streams.engine import Output, StudentEngine
from streams.nudging import answer_request
from streams.replayclock import ReplayClock
from topology.schemas import (
    ChatRequest,
    ClockTick,
    DeadLetter,
    NormalizedEvent,
    RunScored,
    SourceRef,
    decode,
)
from topology.seam.outbox import Outbox

log = logging.getLogger("vexnudge.analysis")


class Analysis:
    """The agent's handlers, sharing the pipeline, the student store and the replay clock."""

    def __init__(self, p: Pipeline, context: BatchContext | None = None) -> None:
        self.p = p
        self.context = context or BatchContext(Outbox(p.app.producer))
        self.live = p.settings.clock_mode == "live"
        self.store = StudentStore(
            p.tables,
            self.context,
            p.app.producer,
            p.config,
            p.scorer,
            NudgeConfig.from_settings(p.settings),
            live=self.live,
        )
        self.clock = ReplayClock()

    def forget(self) -> None:
        """Drop every cached state, index entry and watermark (partitions moved)."""
        self.store.forget()
        self.clock.reset()

    def restore_checkpoint(self) -> None:
        """After a failed record: its student's state as it was before the record."""
        self.store.restore()

    async def emit(self, outputs: list[Output], key: str) -> None:
        metrics = self.p.metrics
        for record in outputs:
            if isinstance(record, RunScored):
                metrics.runs_scored.inc()
            elif isinstance(record, DeadLetter):
                metrics.runs_unscored.labels(record.reason.value).inc()
            await publish(self.p, record, key, outbox=self.context.outbox)

    # -- events ---------------------------------------------------------------------
    async def on_event(self, value: bytes, source: SourceRef) -> None:
        """A ``NormalizedEvent`` record (from the re-keyed events topic)."""
        await self.analyse(decode(NormalizedEvent, value), source.partition)

    async def analyse(self, event: NormalizedEvent, partition: int) -> None:
        """Run one accepted event through its student's engine; ``partition`` is the
        one the student's state lives on (the input record's partition)."""
        state = self.store.load(event.student_key)
        self.store.checkpoint(event.student_key, state)
        raw = event.source
        if raw is not None and raw.offset <= state.applied.get(str(raw.partition), -1):
            self.p.metrics.duplicates_skipped.inc()
            return
        self.store.load_partition(partition)
        engine = self.store.engine(state)
        await self.emit(self.run(engine, event), event.student_key)
        if raw is not None:
            state.applied[str(raw.partition)] = raw.offset
        self.store.save(engine, partition)
        if not self.live:
            await self.follow_watermark(partition, event.ts, event.student_key)

    def run(self, engine: StudentEngine, event: NormalizedEvent) -> list[Output]:
        """The engine's outputs for one event, timed, with the sessions it dropped counted."""
        started = time.perf_counter()
        outputs = engine.offer(event)
        self.p.metrics.event_seconds.observe(time.perf_counter() - started)
        if engine.late:
            self.p.metrics.late_events.inc(engine.late)
        for why in engine.dropped:
            self.p.metrics.sessions_dropped.labels(why).inc()
        return outputs

    async def follow_watermark(self, partition: int, ts: float, current: str) -> None:
        """Replay mode: advance this partition's other students to its watermark,
        while the partition's input is in time order (the replay clock's rule)."""
        if not self.clock.knows(partition):
            stored = self.store.stored_watermark(partition)
            if stored is not None:
                self.clock.start(partition, stored)
        step = self.clock.observe(partition, ts)
        self.store.watermark_moved(partition, step)
        if step.disordered:
            log.warning(
                "partition %d: input out of time order (%.0f s behind); advancing students by their own events only",
                partition,
                step.mark - ts,
            )
        if not step.follow:
            return
        for key in self.store.due(partition, step.mark):
            if key == current:
                self.store.reschedule(key, partition)
                continue
            await self.advance(key, partition, step.mark, inclusive=False, final=False)

    # -- time and questions ------------------------------------------------------------
    async def advance(self, key: str, partition: int, now: float, *, inclusive: bool, final: bool) -> None:
        """Move one student's clock to ``now``; a student idle past the recency window is dropped."""
        engine = self.store.engine(self.store.load(key))
        outputs = engine.tick(now, inclusive=inclusive, final=final)
        engine.drop_stale_sessions(now)
        await self.emit(outputs, key)
        if engine.expired(now):
            self.store.drop(engine)
        else:
            self.store.save(engine, partition)

    async def on_tick(self, value: bytes, source: SourceRef) -> None:
        """A clock tick: advance the partition's due students (all of them on the final tick)."""
        tick = decode(ClockTick, value)
        self.store.load_partition(source.partition)
        for key in self.store.due(source.partition, tick.now, tick.final):
            await self.advance(key, source.partition, tick.now, inclusive=True, final=tick.final)
        self.p.metrics.students.set(len(self.store))

    async def on_chat(self, value: bytes, source: SourceRef) -> None:
        """A student's question: answered from the stored state, programs and metrics."""
        chat = decode(ChatRequest, value)
        state, programs, metric_log = self.store.question_view(chat.student_key)
        await publish(
            self.p, answer_request(chat, state, programs, metric_log), chat.student_key, outbox=self.context.outbox
        )
