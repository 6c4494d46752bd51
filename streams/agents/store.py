"""The student store: the analysis' state between records, and the one commit of a batch.

It owns, for the students of this worker's partitions:

* the **state cache**: decoded states (the ``students`` table holds the truth;
  emptied at every rebalance and for a student whose processing failed), with
  each one's serialized form as last saved;
* the **crash checkpoint**: the state of the student being processed as it was
  before the record, put back when processing fails (:meth:`StudentStore.restore`);
* the **due index**: when each student next changes without an event;
* the **stored replay watermarks** (``watermarks`` table), each written once
  its partition's watermark has risen :data:`STORE_MARK_EVERY` times;
* the batch's table writes and their order, :meth:`StudentStore.commit`.

Engines are built over the store's tables (programs and metric chunks of a
student), so what an engine writes is part of the batch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from feedback.nudge import NudgeConfig
from streams.agents.batching import BatchContext, TableBuffer
from streams.agents.due import DueIndex
from streams.config import EngineConfig
from streams.engine import StudentEngine
from streams.programs import ChunkedMetricLog, Scorer
from streams.replayclock import Step
from streams.state import StudentState

#: A partition's replay watermark is stored after this many raises (once per
#: batch at most).  Under time-ordered input the watermark is the latest event
#: time, which a restarted worker learns again from the next event; the stored
#: value only bounds what is lost when a partition's input is out of order.
STORE_MARK_EVERY = 64


class TableProgramStore:
    """Run programs of one student in the ``programs`` table, by (session, digest)."""

    def __init__(self, table: TableBuffer, student_key: str) -> None:
        self.table, self.prefix = table, student_key + "\x1f"

    def _key(self, session_id: str, program_digest: str) -> bytes:
        return f"{self.prefix}{session_id}\x1f{program_digest}".encode()

    def get(self, session_id: str, program_digest: str) -> str | None:
        raw = self.table.get(self._key(session_id, program_digest))
        return raw.decode() if raw is not None else None

    def put(self, session_id: str, program_digest: str, xml: str) -> None:
        self.table[self._key(session_id, program_digest)] = xml.encode()

    def delete(self, session_id: str, program_digest: str) -> None:
        key = self._key(session_id, program_digest)
        if self.table.get(key) is not None:
            del self.table[key]


def table_metric_log(table: TableBuffer, student_key: str, keep: int) -> ChunkedMetricLog:
    """The student's metric log in the ``metrics`` table."""

    def get(key: str) -> bytes | None:
        return table.get(key.encode())

    def put(key: str, value: bytes | None) -> None:
        if value is not None:
            table[key.encode()] = value
        elif table.get(key.encode()) is not None:
            del table[key.encode()]

    return ChunkedMetricLog(get, put, student_key + "\x1f", keep)


class Flushable(Protocol):
    """Table writes of another stage that go in the commit's first table step."""

    def flush(self) -> Awaitable[object]: ...


class StudentStore:
    """States, checkpoint, due index and stored watermarks of this worker's students."""

    def __init__(
        self,
        tables: Mapping[str, Any],
        context: BatchContext,
        producer: Any,
        config: EngineConfig,
        scorer: Scorer,
        nudge: NudgeConfig | None,
        *,
        live: bool,
    ) -> None:
        """``tables``: the Faust tables by name; ``producer``: the Faust producer (direct writes)."""
        self.context, self.config, self.scorer, self.nudge, self.live = context, config, scorer, nudge, live
        self.students, self.programs, self.metrics, self.watermarks = (
            TableBuffer(tables[name], context, producer) for name in ("students", "programs", "metrics", "watermarks")
        )
        self.index = DueIndex()
        self._cache: dict[str, StudentState] = {}
        self._saved: dict[str, bytes] = {}
        """The serialized form of each cached state as last saved (the checkpoint
        of its next event, without serializing it again)."""
        self._checkpoint: tuple[str, bytes | None] | None = None
        """The student being processed and its serialized state before the record
        (None: no state yet); None when no one student is being processed."""
        self._marks: dict[int, tuple[float, int, Any]] = {}
        """Per partition: the replay watermark, how many raises since it was stored,
        and the last event that raised it (whose partition the stored value goes to)."""

    # -- states -----------------------------------------------------------------------
    def load(self, key: str) -> StudentState:
        """The student's state: cached, else from the table, else a new one."""
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        raw = self.students.get(key.encode())
        if not raw:
            return StudentState(key)
        self._saved[key] = raw
        return StudentState.from_bytes(raw, self.config)

    def engine(self, state: StudentState) -> StudentEngine:
        """An engine for ``state`` over the student's programs and metric chunks in the tables."""
        key = state.student_key
        return StudentEngine(
            state,
            self.config,
            self.scorer,
            TableProgramStore(self.programs, key),
            self.nudge,
            table_metric_log(self.metrics, key, self.config.max_metric_events),
        )

    def save(self, engine: StudentEngine, partition: int) -> None:
        """Keep the engine's state (written at the commit) and when it is next due."""
        state = engine.state
        state.partition = partition
        data = self._saved[state.student_key] = state.to_bytes()
        self.students[state.student_key.encode()] = data
        self._cache[state.student_key] = state
        self.index.set(state.student_key, partition, engine.next_tick(self.live))

    def drop(self, engine: StudentEngine) -> None:
        """Delete the student: its sessions' programs and chunks, its state, its index entry."""
        for session_id in list(engine.state.sessions):
            engine.forget_session(session_id)
        del self.students[engine.state.student_key.encode()]
        self._cache.pop(engine.state.student_key, None)
        self._saved.pop(engine.state.student_key, None)
        self.index.discard(engine.state.student_key)

    def question_view(self, key: str) -> tuple[StudentState | None, TableProgramStore, ChunkedMetricLog]:
        """What a question reads: the stored state (no cache), programs and metric log."""
        raw = self.students.get(key.encode())
        state = StudentState.from_bytes(raw, self.config) if raw else None
        return (
            state,
            TableProgramStore(self.programs, key),
            table_metric_log(self.metrics, key, self.config.max_metric_events),
        )

    # -- the crash checkpoint -----------------------------------------------------------
    def checkpoint(self, key: str, state: StudentState) -> None:
        """Remember the student's state before its record is processed."""
        self._checkpoint = (key, self._saved.get(key) if state.last_ts is not None else None)

    def clear_checkpoint(self) -> None:
        """A new record: no student's state is remembered yet."""
        self._checkpoint = None

    def restore(self) -> None:
        """After a failed record: its student's state as it was before (without a
        checkpoint, every cached state is dropped and re-read from the table)."""
        if self._checkpoint is None:
            self._cache.clear()
            return
        key, raw = self._checkpoint
        if raw is None:
            self._cache.pop(key, None)
            self._saved.pop(key, None)
            del self.students[key.encode()]
        else:
            self._cache[key] = StudentState.from_bytes(raw, self.config)
            self._saved[key] = raw
            self.students[key.encode()] = raw

    # -- the due index --------------------------------------------------------------------
    def load_partition(self, partition: int) -> None:
        """Index the partition's students from the table (once after each rebalance)."""
        if partition in self.index.loaded:
            return
        for _key, raw in list(self.students.items()):
            state = StudentState.from_bytes(raw, self.config)
            if state.partition == partition:
                self.index.set(state.student_key, partition, self.engine(state).next_tick(self.live))
        self.index.loaded.add(partition)

    def due(self, partition: int, now: float, final: bool = False) -> list[str]:
        """Students of ``partition`` due at or before ``now`` (all when ``final``); re-:meth:`save` them."""
        return self.index.students_due(partition, now, final)

    def reschedule(self, key: str, partition: int) -> None:
        """Put a student taken by :meth:`due` back in the index unchanged (replay time)."""
        self.index.set(key, partition, self.engine(self.load(key)).next_tick(False))

    def __len__(self) -> int:
        """How many students are indexed."""
        return len(self.index)

    # -- stored replay watermarks ---------------------------------------------------------
    def stored_watermark(self, partition: int) -> float | None:
        """The partition's replay watermark as stored, if any."""
        stored = self.watermarks.get(f"p{partition}".encode())
        return float(stored) if stored else None

    def watermark_moved(self, partition: int, step: Step) -> None:
        """Count a raise of the partition's watermark (by the current event)."""
        mark, raises, event = self._marks.get(partition, (step.mark, 0, None))
        if step.raised:
            mark, raises, event = step.mark, raises + 1, self.context.event
        self._marks[partition] = (mark, raises, event)

    def _store_watermarks(self) -> None:
        """Put each watermark raised :data:`STORE_MARK_EVERY` times, on the partition
        of the event that last raised it."""
        for partition, (mark, raises, event) in self._marks.items():
            if raises >= STORE_MARK_EVERY and event is not None:
                self.context.enter(event)
                self.watermarks[f"p{partition}".encode()] = repr(mark).encode()
                self._marks[partition] = (mark, 0, event)

    # -- lifecycle ------------------------------------------------------------------------
    def forget(self) -> None:
        """Drop every cached state, index entry and watermark count (partitions moved)."""
        self._cache.clear()
        self._saved.clear()
        self._marks.clear()
        self.index.reset()

    async def commit(
        self, ids: Flushable | None = None, on_outputs: Callable[[Counter[str]], None] | None = None
    ) -> None:
        """Write one batch: its outputs, then its table changes.

        Each step is enqueued on the producer before the next begins (the
        outbox is sent at each boundary; ``producer_linger_ms=0``, so records
        leave in the order they were enqueued), and the order makes every
        prefix a crash lets through consistent: a state is never written
        before the outputs it records as done, and never refers to a program
        or chunk that is gone (at worst an unreferenced one stays).

        1. The outputs: every record the batch's handlers published
           (``on_outputs`` gets their counts per topic).
        2. New rows that states will refer to: ``ids`` (ingest's id windows),
           new programs, new metric chunks, and the replay watermarks due for
           storage; sent.
        3. The student states (puts and deletions); sent.
        4. Deletions of programs and metric chunks no state refers to any
           more, straight to the producer (they may share a produce request
           with step 3).
        """
        outbox = self.context.outbox
        # 1. outputs
        await outbox.send()
        counts = outbox.take_counts()
        if on_outputs is not None:
            on_outputs(counts)
        # 2. what states refer to
        if ids is not None:
            await ids.flush()
        await self.programs.flush(deletes=False)
        await self.metrics.flush(deletes=False)
        self._store_watermarks()
        await self.watermarks.flush()
        await outbox.send()
        # 3. the states
        await self.students.flush()
        await outbox.send()
        # 4. deletions
        await self.programs.flush(direct=True)
        await self.metrics.flush(direct=True)
