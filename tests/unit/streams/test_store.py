"""The student store: one commit writes a batch in numbered steps (outputs, then
what states refer to — ingest's id windows, programs, metric chunks, replay
watermarks — then the states, then deletions), and the crash checkpoint puts
a student's state back as it was before a failed record."""

from __future__ import annotations

import asyncio

from streams.agents.store import STORE_MARK_EVERY
from streams.replayclock import Step
from streams.state import StudentState
from tests.unit.streams.test_stream_agent import Event, Log, Message, _batches, _lines_by_home, _raw_events, _stream
from topology.partitioning import partition_for
from topology.schemas import NormalizedEvent

STEP_TWO = {"ingest-seen", "programs", "metrics", "watermarks"}


def _steps(log: Log) -> list[list[tuple[str, str]]]:
    """Each batch's changelog records, in the order they reached the producer."""
    batches: list[list[tuple[str, str]]] = []
    previous = "send"
    for kind, name in log:
        if kind != "send" and previous == "send":
            batches.append([])
        if kind != "send":
            batches[-1].append((kind, name))
        previous = kind
    return batches


def test_commit_writes_what_states_refer_to_before_the_states_and_deletions_last(tmp_path) -> None:
    from streams.agents.stream import run_batches

    log = Log()
    stream = _stream(tmp_path, log)
    home, _ = _lines_by_home()
    asyncio.run(run_batches(_batches(_raw_events(stream, home[:80]), 20), stream))
    batches = _steps(log)
    assert len(batches) == 4
    for batch in batches:
        states = [i for i, (kind, name) in enumerate(batch) if name == "students"]
        before = [i for i, (kind, name) in enumerate(batch) if kind == "put" and name in STEP_TWO]
        deletions = [i for i, (kind, name) in enumerate(batch) if kind == "delete" and name != "students"]
        assert states and before
        assert max(before) < min(states)  # step 2 before step 3
        assert all(i > max(states) for i in deletions)  # step 4 last
    assert any(("put", "ingest-seen") in batch for batch in batches)


def test_a_watermark_is_stored_after_enough_raises(tmp_path) -> None:
    log = Log()
    stream = _stream(tmp_path, log)
    store = stream.analysis.store
    store.context.enter(Event(Message("raw", 3, 0, b"", None)))
    for i in range(STORE_MARK_EVERY - 1):
        store.watermark_moved(3, Step(100.0 + i, raised=i > 0, follow=True, disordered=False))
    asyncio.run(store.commit())
    assert store.stored_watermark(3) is None  # 62 raises: not yet
    store.watermark_moved(3, Step(500.0, raised=True, follow=True, disordered=False))
    store.watermark_moved(3, Step(501.0, raised=True, follow=True, disordered=False))
    asyncio.run(store.commit())
    assert store.stored_watermark(3) == 501.0
    assert ("put", "watermarks") in log


def _event(student: str, ts: float, event_id: str) -> NormalizedEvent:
    return NormalizedEvent(
        event_id=event_id,
        envelope_id_int=None,
        student_key=student,
        student_id=student,
        session_id="s1",
        event_type="blockChanged",
        ts=ts,
        timestamp="2026-05-06T09:14:07Z",
        workspace_status="ok",
    )


def test_restore_puts_back_the_state_before_the_record(tmp_path) -> None:
    stream = _stream(tmp_path, Log())
    store, partition = stream.analysis.store, partition_for("amy", 8)
    stream.analysis.context.enter(Event(Message("raw", partition, 0, b"", None)))

    def process(event: NormalizedEvent) -> StudentState:
        state = store.load("amy")
        store.checkpoint("amy", state)
        engine = store.engine(state)
        engine.on_event(event)
        store.save(engine, partition)
        return state

    process(_event("amy", 1000.0, "1"))
    store.clear_checkpoint()
    process(_event("amy", 1010.0, "2"))
    assert store.load("amy").last_ts == 1010.0
    store.restore()  # the second record failed after its state was saved
    assert store.load("amy").last_ts == 1000.0
    store.clear_checkpoint()
    store.checkpoint("bob", store.load("bob"))  # a student with no state yet
    store.restore()
    assert store.load("bob").last_ts is None and store.students.get(b"bob") is None
