"""Analysis: per-student state in tables, outputs on the analysis topics.

The handlers of the stream agent (:mod:`streams.agents.stream`) for accepted
events, clock ticks and questions.  For each event it loads the student's
state, runs the pure engine, publishes the outputs, then stores the state with
the raw offset it applied: a re-delivered record (after a crash) finds its
offset already applied and is skipped, while records the crash lost are simply
recomputed — outputs carry ids derived from their inputs, so consumers drop
duplicates.

Time: live mode advances students on wall-clock ticks; replay mode advances
them with event time — each event also moves its partition's watermark, and
students of that partition whose alerts fall due before it are advanced.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from feedback.nudge import NudgeConfig
from streams.agents.batching import BatchContext, TableBuffer
from streams.agents.due import DueIndex
from streams.agents.emit import publish
from topology.seam.outbox import Outbox
from streams.engine import Output, StudentEngine
from streams.nudging import answer_request
from streams.programs import ChunkedMetricLog
from streams.state import StudentState
from topology import topics as T
from streams.agents.pipeline import Pipeline
from topology.schemas import (
    ChatRequest,
    ClockTick,
    DeadLetter,
    NormalizedEvent,
    RunScored,
    SourceRef,
    decode,
)


log = logging.getLogger("vexnudge.analysis")
#: How far behind its partition's watermark an event may be before replay mode
#: stops advancing that partition's students by the watermark.
DISORDER_S = 60.0


class TableProgramStore:
    """Run programs of one student in the ``programs`` table, by (session, digest)."""

    def __init__(self, table: object, student_key: str) -> None:
        self.table, self.prefix = table, student_key + "\x1f"

    def _key(self, session_id: str, program_digest: str) -> bytes:
        return f"{self.prefix}{session_id}\x1f{program_digest}".encode()

    def get(self, session_id: str, program_digest: str) -> str | None:
        raw = self.table.get(self._key(session_id, program_digest))  # type: ignore[attr-defined]
        return raw.decode() if raw is not None else None

    def put(self, session_id: str, program_digest: str, xml: str) -> None:
        self.table[self._key(session_id, program_digest)] = xml.encode()  # type: ignore[index]

    def delete(self, session_id: str, program_digest: str) -> None:
        key = self._key(session_id, program_digest)
        if self.table.get(key) is not None:  # type: ignore[attr-defined]
            del self.table[key]  # type: ignore[attr-defined]


def table_metric_log(table: object, student_key: str, keep: int) -> ChunkedMetricLog:
    """The student's metric log in the ``metrics`` table."""

    def put(key: str, value: bytes | None) -> None:
        if value is not None:
            table[key.encode()] = value  # type: ignore[index]
        elif table.get(key.encode()) is not None:  # type: ignore[attr-defined]
            del table[key.encode()]  # type: ignore[attr-defined]

    return ChunkedMetricLog(lambda key: table.get(key.encode()), put,  # type: ignore[attr-defined]
                            student_key + "\x1f", keep)


class Analysis:
    """The agent's handlers, sharing the pipeline, the tables and the due index."""

    def __init__(self, p: Pipeline, context: BatchContext | None = None) -> None:
        self.p = p
        self.context = context or BatchContext(Outbox(p.app.producer))
        self.buffers = [TableBuffer(p.tables[name], self.context, p.app.producer)
                        for name in ("students", "programs", "metrics", "watermarks")]
        self.students, self.programs, self.metric_table, self.watermarks = self.buffers
        self.live = p.settings.clock_mode == "live"
        self.nudge = NudgeConfig.from_settings(p.settings)
        self.index = DueIndex()
        self.checkpoint: tuple[str, bytes | None] | None = None
        """The state of the student being processed, as it was before the event."""
        self.marks: dict[int, tuple[float, int, Any]] = {}
        """Per partition: the replay watermark, how many raises since it was stored,
        and the last event that raised it (whose partition the stored value goes to)."""
        self.disordered: set[int] = set()
        self.cache: dict[str, StudentState] = {}
        """Decoded states of this worker's students (the table holds the truth;
        emptied at every rebalance and for a student whose processing failed)."""
        self.saved: dict[str, bytes] = {}
        """The serialized form of each cached state as last saved (the checkpoint
        of its next event, without serializing it again)."""

    # -- state ----------------------------------------------------------------------
    def load(self, key: str) -> StudentState:
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        raw = self.students.get(key.encode())
        if not raw:
            return StudentState(key)
        self.saved[key] = raw
        return StudentState.from_bytes(raw, self.p.config)

    async def flush(self) -> None:
        """Write the batch's table changes (after its outputs were sent).

        Order: new programs and metric chunks, then the student states that
        refer to them, then deletions of programs and chunks no state needs any
        more.  Each step is enqueued on the producer before the next begins
        (the outbox is sent at each boundary; the deletions go to the producer
        directly, so they may ride in the same produce request as the states),
        and the records leave in that order, so whatever prefix of them a crash
        lets through is consistent: a restored state never refers to a program
        or chunk that is gone (at worst an unreferenced one stays).
        """
        outbox = self.context.outbox
        await self.programs.flush(deletes=False)
        await self.metric_table.flush(deletes=False)
        await self.flush_watermarks()
        await outbox.send()
        await self.students.flush()
        await outbox.send()
        await self.programs.flush(direct=True)
        await self.metric_table.flush(direct=True)

    def forget(self) -> None:
        """Drop every cached state and index entry (partitions moved)."""
        self.cache.clear()
        self.saved.clear()
        self.marks.clear()
        self.disordered.clear()
        self.index.reset()

    def engine_for(self, state: StudentState) -> StudentEngine:
        store = TableProgramStore(self.programs, state.student_key)
        log = table_metric_log(self.metric_table, state.student_key, self.p.config.max_metric_events)
        return StudentEngine(state, self.p.config, self.p.scorer, store, self.nudge, log)

    def save(self, engine: StudentEngine, partition: int) -> None:
        state = engine.state
        state.partition = partition
        data = self.saved[state.student_key] = state.to_bytes()
        self.students[state.student_key.encode()] = data
        self.cache[state.student_key] = state
        self.index.set(state.student_key, partition, engine.next_due(self.live))

    def drop(self, engine: StudentEngine) -> None:
        for session_id in list(engine.state.sessions):
            engine.forget_session(session_id)
        del self.students[engine.state.student_key.encode()]
        self.cache.pop(engine.state.student_key, None)
        self.saved.pop(engine.state.student_key, None)
        self.index.discard(engine.state.student_key)

    def load_partition(self, partition: int) -> None:
        if partition in self.index.loaded:
            return
        for _key, raw in list(self.students.items()):
            state = StudentState.from_bytes(raw, self.p.config)
            if state.partition == partition:
                self.index.set(state.student_key, partition, self.engine_for(state).next_due(self.live))
        self.index.loaded.add(partition)

    async def emit(self, outputs: list[Output], key: str) -> None:
        metrics = self.p.metrics
        for record in outputs:
            if isinstance(record, RunScored):
                metrics.runs_scored.inc()
            elif isinstance(record, DeadLetter):
                metrics.runs_unscored.labels(record.reason.value).inc()
            await publish(self.p, record, key, outbox=self.context.outbox)

    # -- handlers -------------------------------------------------------------------
    async def on_event(self, value: bytes, source: SourceRef) -> None:
        """A ``NormalizedEvent`` record (from the re-keyed events topic)."""
        await self.analyse(decode(NormalizedEvent, value), source.partition)

    async def analyse(self, event: NormalizedEvent, partition: int) -> None:
        """Run one accepted event through its student's engine; ``partition`` is the
        one the student's state lives on (the input record's partition)."""
        state = self.load(event.student_key)
        self.checkpoint = (event.student_key, self.saved.get(event.student_key) if state.last_ts is not None
                           else None)
        raw = event.source
        if raw is not None and raw.offset <= state.applied.get(str(raw.partition), -1):
            self.p.metrics.duplicates_skipped.inc()
            return
        self.load_partition(partition)
        started = time.perf_counter()
        engine = self.engine_for(state)
        outputs = engine.on_event(event)
        self.p.metrics.event_seconds.observe(time.perf_counter() - started)
        for why in engine.dropped:
            self.p.metrics.sessions_dropped.labels(why).inc()
        await self.emit(outputs, event.student_key)
        if raw is not None:
            state.applied[str(raw.partition)] = raw.offset
        self.save(engine, partition)
        if not self.live:
            await self.follow_watermark(partition, event.ts, event.student_key)

    async def follow_watermark(self, partition: int, ts: float, current: str) -> None:
        """Replay mode: advance this partition's other students to its event time.

        Only while the partition's input is in time order: an event more than
        :data:`DISORDER_S` behind the watermark switches the partition to
        per-student time (each student advances by its own events and the
        final tick), so out-of-order input cannot fire spurious alerts.
        """
        mark = self.watermark(partition, ts)
        if partition in self.disordered:
            return
        if ts < mark - DISORDER_S:
            self.disordered.add(partition)
            log.warning("partition %d: input out of time order (%.0f s behind); advancing students "
                        "by their own events only", partition, mark - ts)
            return
        for key in self.index.students_due(partition, mark):
            if key == current:
                self.index.set(key, partition, self.engine_for(self.load(key)).next_due(False))
                continue
            await self.advance(key, partition, mark, inclusive=False, final=False)

    def restore_checkpoint(self) -> None:
        """After a failed event: its student's state as it was before the event."""
        if self.checkpoint is None:
            self.cache.clear()
            return
        key, raw = self.checkpoint
        if raw is None:
            self.cache.pop(key, None)
            self.saved.pop(key, None)
            del self.students[key.encode()]
        else:
            self.cache[key] = StudentState.from_bytes(raw, self.p.config)
            self.saved[key] = raw
            self.students[key.encode()] = raw

    def watermark(self, partition: int, ts: float) -> float:
        """Raise the partition's watermark to ``ts``; store it every 64 raises.

        Under time-ordered input the watermark is the latest event time, which
        a restarted worker learns again from the next event; the stored value
        only bounds what is lost when a partition's input is out of order.
        """
        if partition not in self.marks:
            stored = self.watermarks.get(f"p{partition}".encode())
            self.marks[partition] = (float(stored) if stored else ts, 0, None)
        mark, raises, event = self.marks[partition]
        if ts > mark:
            mark, raises, event = ts, raises + 1, self.context.event
        self.marks[partition] = (mark, raises, event)
        return mark

    async def flush_watermarks(self) -> None:
        """Store each partition's watermark after 64 raises (once per batch at most),
        on the partition of the event that raised it."""
        for partition, (mark, raises, event) in self.marks.items():
            if raises >= 64 and event is not None:
                self.context.enter(event)
                self.watermarks[f"p{partition}".encode()] = repr(mark).encode()
                self.marks[partition] = (mark, 0, event)
        await self.watermarks.flush()

    async def advance(self, key: str, partition: int, now: float, *, inclusive: bool, final: bool) -> None:
        engine = self.engine_for(self.load(key))
        outputs = engine.advance(now, inclusive=inclusive, final=final)
        engine.drop_stale_sessions(now)
        await self.emit(outputs, key)
        if engine.expired(now):
            self.drop(engine)
        else:
            self.save(engine, partition)

    async def on_tick(self, value: bytes, source: SourceRef) -> None:
        tick = decode(ClockTick, value)
        self.load_partition(source.partition)
        for key in self.index.students_due(source.partition, tick.now, tick.final):
            await self.advance(key, source.partition, tick.now, inclusive=True, final=tick.final)
        self.p.metrics.students.set(len(self.index))

    async def on_chat(self, value: bytes, source: SourceRef) -> None:
        chat = decode(ChatRequest, value)
        raw = self.students.get(chat.student_key.encode())
        state = StudentState.from_bytes(raw, self.p.config) if raw else None
        programs = TableProgramStore(self.programs, chat.student_key)
        log = table_metric_log(self.metric_table, chat.student_key, self.p.config.max_metric_events)
        await publish(self.p, answer_request(chat, state, programs, log), chat.student_key,
                      outbox=self.context.outbox)
