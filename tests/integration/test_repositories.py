"""The repositories on the real PostgreSQL: idempotent writes, ordering, replay, claims."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator, Iterator

import asyncpg
import pytest

from delivery.db import open_pool
from delivery.repo import events, messages, requests, triggers
from streams.ids import derived_id, trigger_id
from tests.fakes.scratch_db import scratch_database
from topology.schemas.analysis import TriggerEvidence, TriggerFired, TriggerType
from topology.schemas.events import NormalizedEvent, SourceRef
from topology.schemas.feedback import FeedbackRequest, Lane
from topology.settings import Settings

pytestmark = pytest.mark.integration


@pytest.fixture
async def pool(stack: Settings) -> AsyncIterator[asyncpg.Pool]:
    async with open_pool(stack, min_size=1, max_size=4) as p:
        yield p


@pytest.fixture(scope="module")
def scratch(stack: Settings) -> Iterator[Settings]:
    """A database of this module's own, for claims over "every pending row"."""
    with scratch_database(stack, "vexnudge_repo") as settings:
        yield settings


@pytest.fixture
async def scratch_pool(scratch: Settings) -> AsyncIterator[asyncpg.Pool]:
    async with open_pool(scratch, min_size=1, max_size=4) as p:
        yield p


def event(student: str, event_id: str, ts: float, session: str = "s1", **extra: object) -> NormalizedEvent:
    int_id = int(event_id) if event_id.isdigit() else None
    fields: dict[str, object] = {
        "event_id": event_id,
        "envelope_id_int": int_id,
        "student_key": student,
        "student_id": student.upper(),
        "session_id": session,
        "event_type": "blockMoved",
        "ts": ts,
        "timestamp": "2026-05-06T09:00:00Z",
        "workspace_status": "no_project",
        "playground": "GO-Mars",
    }
    fields.update(extra)
    return NormalizedEvent.model_validate(fields)


def fire(
    student: str,
    session: str = "s1",
    kind: TriggerType = TriggerType.WHEEL_SPIN,
    run_index: int | None = 6,
    alert: int | None = None,
    ts: float = 1000.0,
) -> TriggerFired:
    since = 700.0 if run_index is None else None
    return TriggerFired(
        trigger_id=trigger_id(student, session, kind.value, run_index=run_index, idle_since_ts=since, alert=alert),
        type=kind,
        student_key=student,
        student_id=student.upper(),
        session_id=session,
        run_index=run_index,
        alert=alert,
        ts=ts,
        timestamp="2026-05-06T09:14:07Z",
        playground="GO-Mars",
        event_id="5120007",
        detail="6 identical reruns",
        evidence=TriggerEvidence(recent_distances=[0] * 6, zero_streak=6, idle_since_ts=since),
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


# --- events --------------------------------------------------------------------------


async def test_store_events_is_idempotent(pool: asyncpg.Pool, student: str) -> None:
    batch = [event(student, str(i), 1000.0 + i) for i in range(5)]
    assert await events.store_events(pool, batch) == 5
    assert await events.store_events(pool, batch) == 0
    more = [*batch[3:], event(student, "9", 2000.0), event(student, "9", 2000.0)]
    assert await events.store_events(pool, more) == 1
    assert await events.store_events(pool, []) == 0
    assert len(await events.session_events(pool, student, "s1")) == 6


async def test_session_events_in_stream_order(pool: asyncpg.Pool, student: str) -> None:
    same = 1500.0
    expected = [
        event(student, "7", 1000.0),
        event(student, "2", same),
        event(student, "10", same),
        event(student, "s:b", same),
        event(student, "s:a", same),  # stored in this order
        event(student, "1", 1600.0),
    ]
    first, second = expected[:4], expected[4:]
    random.Random(3).shuffle(first)
    assert await events.store_events(pool, [e for e in first if e.event_id != "s:b"]) == 3
    assert await events.store_events(pool, [expected[3]]) == 1  # s:b before s:a
    assert await events.store_events(pool, second) == 2
    got = await events.session_events(pool, student, "s1")
    assert [e.event_id for e in got] == [e.event_id for e in expected]


async def test_events_round_trip(pool: asyncpg.Pool, student: str) -> None:
    original = event(
        student,
        "42",
        1234.567,
        playground_params={"total_score": 3, "m": [1, 2]},
        block_event={"type": "move", "ok": True},
        error_message="x",
        source=SourceRef(topic="vex.events", partition=3, offset=99),
    )
    await events.store_events(pool, [original])
    assert await events.session_events(pool, student, "s1") == [original]


async def test_latest_session(pool: asyncpg.Pool, student: str) -> None:
    assert await events.latest_session(pool, student) is None
    await events.store_events(
        pool,
        [
            event(student, "1", 1000.0, session="old"),
            event(student, "2", 3000.0, session="new"),
            event(student, "3", 2000.0, session="old"),
        ],
    )
    assert await events.latest_session(pool, student) == "new"


# --- triggers --------------------------------------------------------------------------


async def test_record_trigger_once(pool: asyncpg.Pool, student: str) -> None:
    request = proactive(fire(student))
    assert await triggers.record_trigger(pool, request, status="pending")
    assert not await triggers.record_trigger(pool, request, status="suppressed", reason="cooldown")
    row = await triggers.get_trigger(pool, request.trigger.trigger_id)  # type: ignore[union-attr]
    assert row is not None
    assert (row.status, row.reason, row.fire_key, row.attempts) == ("pending", None, "run:6", 0)
    assert row.request == request
    assert row.evidence["zero_streak"] == 6
    assert row.fired_at == pytest.approx(1000.0)


async def test_fire_keys(pool: asyncpg.Pool, student: str) -> None:
    idle = fire(student, kind=TriggerType.INACTIVE, run_index=None, alert=1, ts=1540.0)
    assert triggers.fire_key(idle) == "idle:700.000:1"
    assert await triggers.record_trigger(pool, proactive(idle), status="suppressed", reason="realert_cap")
    rows = await triggers.triggers_for(pool, student, "s1")
    assert [(r.trigger_type, r.fire_key, r.status, r.reason) for r in rows] == [
        ("inactive", "idle:700.000:1", "suppressed", "realert_cap")
    ]


async def test_trigger_status_transitions(pool: asyncpg.Pool, student: str) -> None:
    acted, failed = fire(student, run_index=3), fire(student, run_index=4)
    for trig in (acted, failed):
        await triggers.record_trigger(pool, proactive(trig), status="pending")
    assert await triggers.note_attempt(pool, acted.trigger_id, "boom") == 1
    assert await triggers.note_attempt(pool, acted.trigger_id, "boom again") == 2
    response = str(uuid.uuid4())
    assert await triggers.mark_acted(pool, acted.trigger_id, response)
    assert not await triggers.mark_acted(pool, acted.trigger_id, str(uuid.uuid4()))
    assert not await triggers.mark_failed(pool, acted.trigger_id, "late")
    assert await triggers.mark_failed(pool, failed.trigger_id, "gave up")
    assert not await triggers.mark_failed(pool, failed.trigger_id, "gave up")
    row = await triggers.get_trigger(pool, acted.trigger_id)
    assert row is not None
    assert (row.status, row.response_id, row.attempts, row.last_error) == (
        "acted",
        response,
        2,
        "boom again",
    )
    row = await triggers.get_trigger(pool, failed.trigger_id)
    assert row is not None and (row.status, row.reason) == ("failed", "gave_up")
    assert await triggers.note_attempt(pool, str(uuid.uuid4()), "x") == 0


async def test_pending_requests(pool: asyncpg.Pool, student: str) -> None:
    pending, done = proactive(fire(student, run_index=1)), proactive(fire(student, run_index=2))
    await triggers.record_trigger(pool, pending, status="pending")
    await triggers.record_trigger(pool, done, status="suppressed", reason="stale")
    found = await triggers.pending_requests(pool, older_than_s=0, limit=10_000)
    ids = {r.request_id for r in found}
    assert pending.request_id in ids and done.request_id not in ids
    assert pending.request_id not in {r.request_id for r in await triggers.pending_requests(pool, older_than_s=3600)}


async def test_claims_skip_rows_held_by_another_transaction(scratch_pool: asyncpg.Pool) -> None:
    pool, student = scratch_pool, "claimer"
    fires = [fire(student, run_index=i) for i in range(2)]
    for trig in fires:
        await triggers.record_trigger(pool, proactive(trig), status="pending")
    held, release = asyncio.Event(), asyncio.Event()
    claimed: list[str] = []

    async def hold() -> None:
        async with pool.acquire() as conn, conn.transaction():
            row = await triggers.claim_due(conn, retry_after_s=0, max_delay_s=0)
            assert row is not None
            claimed.append(row.trigger_id)
            held.set()
            await release.wait()

    task = asyncio.create_task(hold())
    await held.wait()
    async with pool.acquire() as conn, conn.transaction():
        second = await triggers.claim_due(conn, retry_after_s=0, max_delay_s=0)
        assert second is not None and second.trigger_id != claimed[0]
        async with pool.acquire() as other, other.transaction():
            assert await triggers.claim_due(other, retry_after_s=0, max_delay_s=0) is None
    release.set()
    await task
    for trig in fires:  # leave no due row to the next test
        assert await triggers.mark_failed(pool, trig.trigger_id, "done")


async def test_claim_waits_for_the_backoff_and_the_pass(scratch_pool: asyncpg.Pool) -> None:
    pool = scratch_pool
    trig = fire("backoff", session="backoff")
    await triggers.record_trigger(pool, proactive(trig), status="pending")
    await triggers.note_attempt(pool, trig.trigger_id, "x")
    async with pool.acquire() as conn, conn.transaction():
        assert await triggers.claim_due(conn, retry_after_s=3600, max_delay_s=7200) is None
        started = await conn.fetchval("select clock_timestamp()")
    await triggers.note_attempt(pool, trig.trigger_id, "tried in this pass")
    async with pool.acquire() as conn, conn.transaction():
        assert await triggers.claim_due(conn, retry_after_s=0, max_delay_s=0, touched_before=started) is None
        row = await triggers.claim_due(conn, retry_after_s=0, max_delay_s=0)
        assert row is not None and row.trigger_id == trig.trigger_id
        # the row is pending with 2 attempts; mark it done so later claims skip it
        await triggers.mark_failed(conn, trig.trigger_id, "done")


# --- questions -------------------------------------------------------------------------


async def test_questions(pool: asyncpg.Pool, student: str) -> None:
    rid = str(uuid.uuid4())
    assert await requests.record_question(pool, rid, student, None, "how do I turn?")
    assert not await requests.record_question(pool, rid, student, "s9", "other text")
    built = FeedbackRequest(
        request_id=derived_id("feedback", rid),
        lane=Lane.REACTIVE,
        student_key=student,
        student_id=student,
        session_id="s9",
        playground="GO-Mars",
        ts=1.0,
        question="how do I turn?",
        chat_request_id=rid,
    )
    assert await requests.attach_request(pool, rid, built)
    row = await requests.get_question(pool, rid)
    assert row is not None
    assert (row.question, row.session_id, row.status, row.request) == (
        "how do I turn?",
        "s9",
        "pending",
        built,
    )
    assert rid in {q.request_id for q in await requests.pending_questions(pool, limit=100_000)}
    assert await requests.note_attempt(pool, rid, "down") == 1
    response = str(uuid.uuid4())
    assert await requests.mark_answered(pool, rid, response)
    assert not await requests.mark_answered(pool, rid, response)
    assert not await requests.mark_failed(pool, rid, "late")
    row = await requests.get_question(pool, rid)
    assert row is not None and (row.status, row.response_id) == ("answered", response)


# --- messages --------------------------------------------------------------------------


async def test_insert_message_returns_the_existing_row(pool: asyncpg.Pool, student: str) -> None:
    rid = str(uuid.uuid4())
    first = await messages.insert_message(
        pool,
        response_id=rid,
        student_key=student,
        session_id="s1",
        role="assistant",
        text="first",
        origin=Lane.PROACTIVE,
        classes=["Reassure"],
        model="m",
    )
    again = await messages.insert_message(
        pool,
        response_id=rid,
        student_key=student,
        session_id="s1",
        role="assistant",
        text="second",
        origin=Lane.PROACTIVE,
    )
    assert first.inserted and not again.inserted
    assert (again.id, again.created_at) == (first.id, first.created_at)
    row = await messages.get_message(pool, rid)
    assert row is not None and (row.text, row.classes, row.model) == ("first", ("Reassure",), "m")


async def test_concurrent_inserts_make_one_row(pool: asyncpg.Pool, student: str) -> None:
    rid = str(uuid.uuid4())
    results = await asyncio.gather(
        *(
            messages.insert_message(
                pool,
                response_id=rid,
                student_key=student,
                session_id="s1",
                role="assistant",
                text=f"v{i}",
                origin="reactive",
            )
            for i in range(4)
        )
    )
    assert sum(r.inserted for r in results) == 1
    assert len({r.id for r in results}) == 1
    assert len(await messages.messages_after(pool, student, 0)) == 1


async def test_messages_after_and_chat(pool: asyncpg.Pool, student: str) -> None:
    ids = []
    for i in range(8):
        role: messages.Role = "student" if i % 2 == 0 else "assistant"
        stored = await messages.insert_message(
            pool,
            response_id=str(uuid.uuid4()),
            student_key=student,
            session_id="s1",
            role=role,
            text=f"m{i}",
            origin="reactive",
        )
        ids.append(stored.id)
    assert ids == sorted(ids)
    replay = await messages.messages_after(pool, student, ids[2])
    assert [m.text for m in replay] == ["m3", "m5", "m7"]
    both = await messages.messages_after(pool, student, ids[2], limit=2, roles=("student", "assistant"))
    assert [m.text for m in both] == ["m3", "m4"]
    assert await messages.messages_after(pool, student, ids[-1]) == []
    chat = await messages.recent_chat(pool, student, "s1")
    assert chat == [("student" if i % 2 == 0 else "assistant", f"m{i}") for i in range(2, 8)]
    assert await messages.recent_chat(pool, student, "other") == []


async def test_recent_chat_leaves_out_the_question_being_answered(pool: asyncpg.Pool, student: str) -> None:
    rid = str(uuid.uuid4())
    await messages.insert_message(
        pool,
        response_id=str(uuid.uuid4()),
        student_key=student,
        session_id="s1",
        role="assistant",
        text="earlier",
        origin="proactive",
    )
    await messages.insert_message(
        pool,
        response_id=rid,
        student_key=student,
        session_id="s1",
        role="student",
        text="now?",
        origin="reactive",
        request_id=rid,
    )
    chat = await messages.recent_chat(pool, student, "s1", exclude_response_id=rid)
    assert chat == [("assistant", "earlier")]


async def test_nudge_rows_join_their_trigger_and_publish_marks(pool: asyncpg.Pool, student: str) -> None:
    trig = fire(student)
    await triggers.record_trigger(pool, proactive(trig), status="pending")
    rid = derived_id("nudge", trig.trigger_id)
    stored = await messages.insert_message(
        pool,
        response_id=rid,
        student_key=student,
        session_id="s1",
        role="assistant",
        text="hint",
        origin="proactive",
        trigger_id=trig.trigger_id,
    )
    row = await messages.get_message(pool, rid)
    assert row is not None
    record = row.to_feedback_message()
    assert (record.message_id, record.trigger_type, record.trigger_detail, record.trigger_id) == (
        stored.id,
        "wheel_spin",
        "6 identical reruns",
        trig.trigger_id,
    )
    assert stored.id in {m.id for m in await messages.unpublished(pool, older_than_s=0, limit=100_000)}
    assert await messages.mark_published(pool, [stored.id]) == 1
    assert await messages.mark_published(pool, [stored.id]) == 0
    assert stored.id not in {m.id for m in await messages.unpublished(pool, older_than_s=0, limit=100_000)}


async def test_reply_for_request(pool: asyncpg.Pool, student: str) -> None:
    rid = str(uuid.uuid4())
    assert await messages.reply_for_request(pool, rid) is None
    await messages.insert_message(
        pool,
        response_id=rid,
        student_key=student,
        session_id=None,
        role="student",
        text="q",
        origin="reactive",
        request_id=rid,
    )
    assert await messages.reply_for_request(pool, rid) is None
    await messages.insert_message(
        pool,
        response_id=derived_id("answer", rid),
        student_key=student,
        session_id=None,
        role="assistant",
        text="a",
        origin="reactive",
        request_id=rid,
    )
    reply = await messages.reply_for_request(pool, rid)
    assert reply is not None and reply.text == "a" and reply.request_id == rid


async def test_json_codecs(pool: asyncpg.Pool) -> None:
    value = {"a": [1, 2.5, None], "b": {"c": "é"}}
    assert await pool.fetchval("select $1::jsonb", value) == value
    assert await pool.fetchval("select $1::json", value) == value
