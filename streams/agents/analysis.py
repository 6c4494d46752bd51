"""The analysis agent: per-student state in tables, outputs on the analysis topics.

One agent consumes the co-partitioned ``vex.events``, ``vex.clock`` and
``vex.chat.requests``.  For each record it loads the student's state, runs the
pure engine, publishes the outputs, then stores the state with the offset it
applied: a re-delivered record (after a crash) finds its offset already
applied and is skipped, while records the crash lost are simply recomputed —
outputs carry ids derived from their inputs, so consumers drop duplicates.
"""

from __future__ import annotations

import time

from streams.agents.emit import dead_letter_failure, publish
from streams.agents.ingest import source_of
from streams.engine import Output, StudentEngine
from streams.state import StudentState
from topology import topics as T
from topology.app import Pipeline
from topology.schemas import ClockTick, DeadLetter, NormalizedEvent, RunScored, SourceRef, decode


class TableProgramStore:
    """Previous-run programs of one student, in the ``programs`` table."""

    def __init__(self, table: object, student_key: str) -> None:
        self.table, self.prefix = table, student_key + "\x1f"

    def get(self, session_id: str) -> str | None:
        raw = self.table.get(self.prefix + session_id)  # type: ignore[attr-defined]
        return raw.decode() if raw else None

    def put(self, session_id: str, xml: str | None) -> None:
        key = self.prefix + session_id
        if xml is None:
            if self.table.get(key) is not None:  # type: ignore[attr-defined]
                del self.table[key]  # type: ignore[attr-defined]
        else:
            self.table[key] = xml.encode()  # type: ignore[index]


class DueIndex:
    """When each student of this worker next needs a clock advance (a cache).

    Rebuilt from the table for a partition the first time a tick for it
    arrives after a rebalance; never the source of truth.
    """

    def __init__(self) -> None:
        self.due: dict[str, tuple[int, float | None]] = {}
        self.loaded: set[int] = set()

    def reset(self) -> None:
        self.due.clear()
        self.loaded.clear()

    def set(self, student: str, partition: int, due: float | None) -> None:
        self.due[student] = (partition, due)

    def discard(self, student: str) -> None:
        self.due.pop(student, None)

    def students_due(self, partition: int, now: float, final: bool) -> list[str]:
        return sorted(s for s, (part, due) in self.due.items()
                      if part == partition and (final or (due is not None and due <= now)))


def register(p: Pipeline) -> None:
    students, programs = p.tables["students"], p.tables["programs"]
    live = p.settings.clock_mode == "live"
    index = DueIndex()
    p.extras["due_index"] = index
    names = {p.settings.topic(s.name): s for s in (T.EVENTS, T.CLOCK, T.CHAT_REQUESTS)}

    def load(key: str) -> StudentState:
        raw = students.get(key)
        return StudentState.from_bytes(raw, p.config) if raw else StudentState(key)

    def engine_for(state: StudentState) -> StudentEngine:
        return StudentEngine(state, p.config, p.scorer, TableProgramStore(programs, state.student_key))

    async def emit(outputs: list[Output], key: str) -> None:
        for record in outputs:
            if isinstance(record, RunScored):
                p.metrics.runs_scored.inc()
            elif isinstance(record, DeadLetter):
                p.metrics.runs_unscored.labels(record.reason.value).inc()
            await publish(p, record, key)

    def save(engine: StudentEngine, partition: int) -> None:
        state = engine.state
        students[state.student_key] = state.to_bytes()
        index.set(state.student_key, partition, engine.next_due(live))

    async def on_event(value: bytes, source: SourceRef) -> None:
        event = decode(NormalizedEvent, value)
        state = load(event.student_key)
        if source.offset <= state.last_offset and source.partition == state.partition:
            p.metrics.duplicates_skipped.inc()
            return
        started = time.perf_counter()
        engine = engine_for(state)
        outputs = engine.on_event(event)
        p.metrics.event_seconds.observe(time.perf_counter() - started)
        await emit(outputs, event.student_key)
        state.partition, state.last_offset = source.partition, source.offset
        save(engine, source.partition)

    def load_partition(partition: int) -> None:
        if partition in index.loaded:
            return
        for _key, raw in list(students.items()):
            state = StudentState.from_bytes(raw, p.config)
            if state.partition == partition:
                index.set(state.student_key, partition, engine_for(state).next_due(live))
        index.loaded.add(partition)

    async def on_tick(value: bytes, source: SourceRef) -> None:
        tick = decode(ClockTick, value)
        load_partition(source.partition)
        for key in index.students_due(source.partition, tick.now, tick.final):
            engine = engine_for(load(key))
            outputs = engine.advance(tick.now, inclusive=True, final=tick.final)
            engine.drop_stale_sessions(tick.now)
            await emit(outputs, key)
            if engine.expired(tick.now):
                for session_id in list(engine.state.sessions):
                    engine.programs.put(session_id, None)
                del students[key]
                index.discard(key)
            else:
                save(engine, source.partition)
        p.metrics.students.set(len(index.due))

    handlers = {T.EVENTS.name: on_event, T.CLOCK.name: on_tick}
    p.extras["analysis_handlers"] = handlers

    @p.app.on_partitions_assigned.connect
    async def _reassigned(app: object, assigned: object = None, **kwargs: object) -> None:  # noqa: ARG001
        index.reset()

    channel = p.app.topic(*names, key_serializer="raw", value_serializer="raw")

    @p.app.agent(channel, name="analysis")
    async def analysis(stream):  # type: ignore[no-untyped-def]
        async for event in stream.events():
            message = event.message
            spec = names[message.topic]
            p.metrics.records_in.labels(spec.name).inc()
            source = source_of(message)
            key = message.key.decode() if message.key else None
            handler = handlers.get(spec.name)
            if handler is None:
                continue
            try:
                await handler(message.value or b"", source)
            except Exception as exc:  # noqa: BLE001 - the stage edge: dead-letter and go on
                await dead_letter_failure(p, "analysis", message.value, source, exc, key)
