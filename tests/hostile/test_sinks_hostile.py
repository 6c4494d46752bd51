"""Hostile records at the PostgreSQL sinks, on the real database.

- U+0000 in any text or JSON field is stored as U+FFFD, in every column path,
  and the record is never refused for it;
- a record PostgreSQL refuses for its content (a timestamp or a number out of
  range) is dead-lettered with the database's message, and the records around
  it are stored: the event store and the feedback lane go on;
- the refusal is counted and ``/healthz`` says ``degraded``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import asyncpg
import pytest

from delivery.db import open_pool
from delivery.repo import events, messages, outbox, requests, triggers
from feedback.factory import build_service
from feedback.service import FeedbackService, Published
from streams.agents import web
from streams.agents.eventstore import store_with_retry
from streams.agents.feedback import Resources, accept_with_retry
from streams.ids import derived_id, trigger_id
from tests.fakes.scratch_db import scratch_database
from topology.metrics import WorkerMetrics
from topology.schemas.analysis import TriggerEvidence, TriggerFired, TriggerType
from topology.schemas.base import decode
from topology.schemas.events import DeadLetter, NormalizedEvent, RejectReason, SourceRef
from topology.schemas.feedback import FeedbackRequest, Lane, NudgeOutcome
from topology.settings import Settings

pytestmark = pytest.mark.integration

NUL, FFFD = "\x00", "\ufffd"
#: to_timestamp() of this is out of range: PostgreSQL refuses the record (22008).
FAR_FUTURE = 1e300


@pytest.fixture(scope="module")
def db_settings(stack: Settings) -> Iterator[Settings]:
    with scratch_database(stack, "vexnudge_hostile") as settings:
        yield settings


@pytest.fixture
async def pool(db_settings: Settings) -> AsyncIterator[asyncpg.Pool]:
    async with open_pool(db_settings, min_size=1, max_size=6) as p:
        yield p


def event(student: str, n: int, *, ts: float | None = None, **extra: Any) -> NormalizedEvent:
    fields: dict[str, Any] = {
        "event_id": str(n),
        "envelope_id_int": n,
        "student_key": student,
        "student_id": student.upper(),
        "session_id": "s1",
        "event_type": "blockMoved",
        "ts": 1000.0 + n if ts is None else ts,
        "timestamp": "2026-05-06T09:00:00Z",
        "workspace_status": "no_project",
        "playground": "GO-Mars",
        "source": SourceRef(topic="vex.telemetry.raw", partition=0, offset=n),
    }
    fields.update(extra)
    return NormalizedEvent.model_validate(fields)


def fire(
    student: str,
    *,
    session: str = "s1",
    ts: float = 1000.0,
    run_index: int = 6,
    detail: str = "6 identical reruns",
    playground: str = "GO-Mars",
) -> TriggerFired:
    return TriggerFired(
        trigger_id=trigger_id(student, session, "wheel_spin", run_index=run_index, idle_since_ts=None, alert=None),
        type=TriggerType.WHEEL_SPIN,
        student_key=student,
        student_id=student.upper(),
        session_id=session,
        run_index=run_index,
        alert=None,
        ts=ts,
        timestamp="2026-05-06T09:14:07Z",
        playground=playground,
        event_id="5120007",
        detail=detail,
        evidence=TriggerEvidence(recent_distances=[0] * 6, zero_streak=6),
    )


def proactive(trigger: TriggerFired) -> FeedbackRequest:
    return FeedbackRequest(
        request_id=derived_id("feedback", trigger.trigger_id),
        lane=Lane.PROACTIVE,
        student_key=trigger.student_key,
        student_id=trigger.student_id,
        session_id=trigger.session_id,
        playground=trigger.playground,
        ts=trigger.ts,
        trigger=trigger,
    )


def reactive(student: str, question: str, session: str = "s1") -> FeedbackRequest:
    rid = str(uuid.uuid4())
    return FeedbackRequest(
        request_id=rid,
        chat_request_id=rid,
        lane=Lane.REACTIVE,
        student_key=student,
        student_id=student.upper(),
        session_id=session,
        playground="GO-Mars",
        ts=1000.0,
        question=question,
    )


# --- a fake pipeline: real metrics, a producer that records ------------------------------


@dataclass
class Producer:
    sent: list[tuple[str, bytes | None, bytes]] = field(default_factory=list)

    async def send(
        self, topic: str, key: bytes | None, value: bytes, partition: int | None, timestamp: Any, headers: Any
    ) -> asyncio.Future[None]:
        self.sent.append((topic, key, value))
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done

    def dead_letters(self) -> list[DeadLetter]:
        return [decode(DeadLetter, value) for topic, _, value in self.sent if topic.endswith("vex.deadletter")]


def pipeline(settings: Settings) -> Any:
    producer = Producer()
    return SimpleNamespace(
        settings=settings,
        metrics=WorkerMetrics(),
        partition_of=lambda key: 0,
        app=SimpleNamespace(producer=producer),
        producer=producer,
    )


async def resources(p: Any, pool: asyncpg.Pool, settings: Settings) -> Resources:
    """The worker's resources on the test pool (no model: the template answers)."""
    res = Resources(p)
    res.pool = pool
    res.service = build_service(settings, pool, res.publish, llm=None, on_refused=res.refused_request)
    return res


# --- U+0000 in every column path -----------------------------------------------------------


async def test_a_nul_in_every_event_column_is_stored_as_fffd(pool: asyncpg.Pool) -> None:
    key = f"st-{uuid.uuid4().hex[:8]}{NUL}x"
    hostile = event(
        key,
        1,
        event_id=f"1{NUL}",
        student_id=f"S{NUL}",
        session_id=f"s{NUL}1",
        event_type=f"block{NUL}Moved",
        playground=f"GO{NUL}Mars",
        error_message=f"bad{NUL}thing",
        source=SourceRef(topic=f"raw{NUL}", partition=0, offset=1),
    )
    assert await events.store_events(pool, [hostile]) == 1
    row = await pool.fetchrow("select * from event_logs.events where student_key = $1", key.replace(NUL, FFFD))
    assert row is not None
    expected = {
        "event_id": f"1{FFFD}",
        "student_id": f"S{FFFD}",
        "session_id": f"s{FFFD}1",
        "event_type": f"block{FFFD}Moved",
        "playground": f"GO{FFFD}Mars",
        "source_topic": f"raw{FFFD}",
    }
    assert {column: row[column] for column in expected} == expected
    assert row["record"]["error_message"] == f"bad{FFFD}thing"  # inside the jsonb record
    stored = await events.session_events(pool, key, f"s{NUL}1")  # a read finds it too
    assert [e.error_message for e in stored] == [f"bad{FFFD}thing"]
    assert stored[0].student_key == key.replace(NUL, FFFD)
    assert await events.store_events(pool, [hostile]) == 0  # still idempotent


async def test_a_nul_in_every_trigger_and_request_column_is_stored_as_fffd(pool: asyncpg.Pool, student: str) -> None:
    trigger = fire(student, session=f"s{NUL}", detail=f"six{NUL}reruns", playground=f"GO{NUL}")
    request = proactive(trigger)
    assert await triggers.record_trigger(pool, request, status="suppressed", reason=f"r{NUL}")
    row = await triggers.get_trigger(pool, trigger.trigger_id)
    assert row is not None
    assert (row.session_id, row.detail, row.playground, row.reason) == (
        f"s{FFFD}",
        f"six{FFFD}reruns",
        f"GO{FFFD}",
        f"r{FFFD}",
    )
    assert row.request is not None and row.request.session_id == f"s{FFFD}"  # the jsonb copy
    assert row.request.trigger is not None and row.request.trigger.detail == f"six{FFFD}reruns"
    assert [t.trigger_id for t in await triggers.triggers_for(pool, student, f"s{NUL}")] == [row.trigger_id]

    pending = proactive(fire(student, run_index=9))
    await triggers.record_trigger(pool, pending, status="pending")
    assert pending.trigger is not None
    assert await triggers.note_attempt(pool, pending.trigger.trigger_id, f"err{NUL}") == 1
    assert await triggers.mark_failed(pool, pending.trigger.trigger_id, f"gave{NUL}up")
    failed = await triggers.get_trigger(pool, pending.trigger.trigger_id)
    assert failed is not None and failed.last_error == f"gave{FFFD}up"


async def test_a_nul_in_a_question_its_messages_and_its_request_is_stored_as_fffd(
    pool: asyncpg.Pool, student: str
) -> None:
    request = reactive(student, f"why{NUL}?", session=f"s{NUL}2")
    async with pool.acquire() as conn, conn.transaction():
        qid, new = await outbox.store_question(conn, request)
    assert new
    question = await requests.get_question(pool, qid)
    assert question is not None
    assert (question.question, question.session_id) == (f"why{FFFD}?", f"s{FFFD}2")
    assert question.request is not None and question.request.question == f"why{FFFD}?"
    reply = outbox.Reply(f"look{NUL}here", [f"hint{NUL}"], f"model{NUL}", note=f"why{NUL}")
    async with pool.acquire() as conn, conn.transaction():
        message, inserted = await outbox.store_answer(conn, request, qid, reply)
    assert inserted and message.text == f"look{FFFD}here" and message.model == f"model{FFFD}"
    assert message.feedback_classes == [f"hint{FFFD}"]
    answered = await requests.get_question(pool, qid)
    assert answered is not None and answered.status == "answered"
    assert answered.last_error == f"why{FFFD}"
    chat = await messages.recent_chat(pool, student, f"s{NUL}2")
    assert chat == [("student", f"why{FFFD}?"), ("assistant", f"look{FFFD}here")]
    assert await requests.note_attempt(pool, qid, f"e{NUL}") == 1


async def test_a_nul_inside_a_jsonb_parameter_given_as_python_is_stored_as_fffd(
    pool: asyncpg.Pool,
) -> None:
    assert await pool.fetchval("select $1::jsonb", {"a": f"x{NUL}y", f"k{NUL}": [NUL]}) == {
        "a": f"x{FFFD}y",
        f"k{FFFD}": [FFFD],
    }


# --- refused records: dead-lettered, the lane goes on -------------------------------------


async def test_the_event_store_dead_letters_a_refused_event_and_stores_the_others(
    pool: asyncpg.Pool, db_settings: Settings, student: str
) -> None:
    p = pipeline(db_settings)
    res = await resources(p, pool, db_settings)
    batch = [event(student, 1), event(student, 2, ts=FAR_FUTURE), event(student, 3)]
    await store_with_retry(res, batch)
    await store_with_retry(res, [event(student, 4), event(student, 5)])  # the store goes on
    stored = await events.session_events(pool, student, "s1")
    assert [e.event_id for e in stored] == ["1", "3", "4", "5"]
    [letter] = p.producer.dead_letters()
    assert (letter.reason, letter.stage) == (RejectReason.SINK_REFUSED, "store")
    assert letter.detail.startswith("DatetimeFieldOverflowError [22008]: timestamp out of range")
    assert (letter.event_id, letter.student_key, letter.session_id) == ("2", student, "s1")
    assert decode(NormalizedEvent, letter.original.encode()) == batch[1]  # the record, whole
    assert letter.source == batch[1].source
    assert p.metrics.degraded() == {"sink_dead_letters": {"event_store:sink_refused": 1}}
    health = web.health(p)
    assert health["status"] == "degraded" and health["degraded"] == p.metrics.degraded()
    rendered = p.metrics.render().decode()
    assert 'vexnudge_sink_dead_letters_total{reason="sink_refused",sink="event_store"} 1.0' in rendered


async def test_a_number_out_of_range_is_refused_too(pool: asyncpg.Pool, db_settings: Settings, student: str) -> None:
    p = pipeline(db_settings)
    res = await resources(p, pool, db_settings)
    bad = event(student, 7, source=SourceRef(topic="raw", partition=2**40, offset=7))
    await store_with_retry(res, [bad, event(student, 8)])
    assert [e.event_id for e in await events.session_events(pool, student, "s1")] == ["8"]
    [letter] = p.producer.dead_letters()
    assert "DataError [22000]" in letter.detail and "out of int32 range" in letter.detail


async def test_the_feedback_lane_dead_letters_a_refused_request_and_goes_on(
    pool: asyncpg.Pool, db_settings: Settings, student: str
) -> None:
    p = pipeline(db_settings)
    res = await resources(p, pool, db_settings)
    refused = proactive(fire(student, ts=FAR_FUTURE, run_index=3))
    honest = proactive(fire(student, run_index=4))
    message = SimpleNamespace(
        value=refused.model_dump_json().encode(), topic="vex.feedback.requests", partition=1, offset=41
    )
    assert not await accept_with_retry(res, refused, message)
    assert await accept_with_retry(res, honest)  # the next request is stored
    assert honest.trigger is not None and refused.trigger is not None
    row = await triggers.get_trigger(pool, honest.trigger.trigger_id)
    assert row is not None and row.status == "pending"
    assert await triggers.get_trigger(pool, refused.trigger.trigger_id) is None
    [letter] = p.producer.dead_letters()
    assert (letter.reason, letter.stage, letter.student_key) == (RejectReason.SINK_REFUSED, "feedback", student)
    assert "[22008]" in letter.detail and letter.original == message.value.decode()
    assert letter.source is not None and letter.source.offset == 41
    assert p.metrics.degraded() == {"sink_dead_letters": {"feedback:sink_refused": 1}}


async def test_handle_marks_a_refused_request_failed_and_publishes_why(
    pool: asyncpg.Pool, db_settings: Settings, student: str
) -> None:
    p = pipeline(db_settings)
    res = await resources(p, pool, db_settings)
    refused = proactive(fire(student, ts=FAR_FUTURE, run_index=5))
    result = await res.service.handle(refused)
    assert result.status == "failed"
    assert result.outcome is not None and result.outcome.reason == "sink_refused"
    outcomes = [decode(NudgeOutcome, v) for t, _, v in p.producer.sent if t.endswith("vex.nudge.outcomes")]
    assert [(o.status, o.reason) for o in outcomes] == [("failed", "sink_refused")]
    [letter] = p.producer.dead_letters()
    assert letter.stage == "feedback" and "[22008]" in letter.detail


@dataclass
class Recorder:
    published: list[Published] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)

    async def publish(self, record: Published) -> None:
        self.published.append(record)

    async def on_refused(self, request: FeedbackRequest, error: str) -> None:
        self.refused.append((request.request_id, error))


async def test_the_retry_sweep_fails_a_refused_row_once_and_delivers_the_next(
    pool: asyncpg.Pool, db_settings: Settings, student: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pending fire whose reply the database refuses ends ``failed`` (sink_refused),
    instead of being claimed again on every pass; the sweep delivers the others."""
    settings = db_settings.model_copy(update={"feedback_retry_after_s": 0.0})
    recorder = Recorder()
    service = FeedbackService(pool, None, settings, recorder.publish, on_refused=recorder.on_refused)
    first, second = proactive(fire(student, run_index=11)), proactive(fire(student, run_index=12))
    for request in (first, second):
        await triggers.record_trigger(pool, request, status="pending")
    assert first.trigger is not None and second.trigger is not None
    real_store = outbox.store_nudge

    async def refusing(conn: asyncpg.Connection, request: FeedbackRequest, reply: Any) -> Any:
        assert request.trigger is not None
        if request.trigger.trigger_id == first.trigger.trigger_id:  # type: ignore[union-attr]
            raise asyncpg.exceptions.NumericValueOutOfRangeError("value out of range")
        return await real_store(conn, request, reply)

    monkeypatch.setattr(outbox, "store_nudge", refusing)
    report = await service.retry_pending()
    assert report.failed == 1 and report.delivered >= 1  # (other tests' pending rows too)
    row = await triggers.get_trigger(pool, first.trigger.trigger_id)
    assert row is not None and (row.status, row.reason) == ("failed", "sink_refused")
    assert row.last_error is not None and "[22003]" in row.last_error
    acted = await triggers.get_trigger(pool, second.trigger.trigger_id)
    assert acted is not None and acted.status == "acted"
    assert [rid for rid, _ in recorder.refused] == [first.request_id]
    again = await service.retry_pending()  # never claimed again
    assert (again.failed, again.still_pending) == (0, 0) and len(recorder.refused) == 1
