"""The feedback service on the real PostgreSQL with the fake Ollama server.

Each test module run gets its own throwaway database, so ``retry_pending``
sees only this module's rows.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import pytest

from delivery.db import open_pool
from delivery.repo import messages, requests, triggers
from delivery.repo.outbox import answer_response_id, nudge_response_id
from feedback.generate import CANNED_REPLIES
from feedback.llm import OllamaClient
from feedback.policy import contains_banned_word
from feedback.service import DeliveryTiming, FeedbackService, Published
from streams.ids import derived_id, trigger_id
from streams.nudging import answer_request
from tests.fakes.ollama_server import FakeOllama, serve
from tests.fakes.scratch_db import scratch_database
from tests.unit.feedback.prompt_cases import METRICS, PROGRAM
from topology.kafka_admin import read_to_end
from topology.schemas.analysis import TriggerEvidence, TriggerFired, TriggerType
from topology.schemas.base import decode
from topology.schemas.feedback import (
    ChatRequest,
    FeedbackMessage,
    FeedbackRequest,
    Lane,
    NudgeOutcome,
)
from topology.settings import PROJECT_ROOT, Settings

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def db_settings(stack: Settings) -> Iterator[Settings]:
    with scratch_database(stack, "vexnudge_fb") as settings:
        yield settings


@pytest.fixture
async def pool(db_settings: Settings) -> AsyncIterator[asyncpg.Pool]:
    async with open_pool(db_settings, min_size=2, max_size=12) as p:
        yield p


@pytest.fixture
async def fake() -> AsyncIterator[FakeOllama]:
    async with serve() as server:
        yield server


@dataclass
class Recorder:
    """An in-memory ``publish`` plus a :class:`ServiceMetrics` that keeps everything."""

    published: list[Published] = field(default_factory=list)
    model_calls: list[tuple[float, bool, str | None]] = field(default_factory=list)
    outcomes: list[tuple[str, Lane]] = field(default_factory=list)
    timings: list[DeliveryTiming] = field(default_factory=list)
    fail_next: int = 0

    async def publish(self, record: Published) -> None:
        if self.fail_next:
            self.fail_next -= 1
            raise ConnectionError("broker unavailable")
        self.published.append(record)

    def model_call(self, seconds: float, *, ok: bool, error: str | None) -> None:
        self.model_calls.append((seconds, ok, error))

    def outcome(self, status: str, lane: Lane) -> None:
        self.outcomes.append((status, lane))

    def delivered(self, timing: DeliveryTiming) -> None:
        self.timings.append(timing)

    def of(self, kind: type[Any]) -> list[Any]:
        return [r for r in self.published if isinstance(r, kind)]


@dataclass
class Rig:
    service: FeedbackService
    recorder: Recorder
    llm: OllamaClient


def rig(pool: asyncpg.Pool, settings: Settings, fake: FakeOllama, **overrides: Any) -> Rig:
    options = {
        "llm_fallback_template": False,
        "feedback_retry_after_s": 0.0,
        "feedback_max_attempts": 20,
        "llm_max_retries": 0,
        "llm_timeout_s": 2.0,
    }
    options.update(overrides)
    configured = settings.model_copy(update=options)
    llm = OllamaClient.from_settings(configured, host=fake.url)
    recorder = Recorder()
    service = FeedbackService(pool, llm, configured, recorder.publish, metrics=recorder)
    return Rig(service, recorder, llm)


def new_student() -> str:
    return f"st-{uuid.uuid4().hex[:10]}"


def proactive(
    student: str,
    kind: TriggerType = TriggerType.WHEEL_SPIN,
    run_index: int = 6,
    *,
    session: str = "s1",
    decision: str = "act",
    reason: str | None = None,
    ts: float = 1000.0,
) -> FeedbackRequest:
    trigger = TriggerFired(
        trigger_id=trigger_id(student, session, kind.value, run_index=run_index),
        type=kind,
        student_key=student,
        student_id=student.upper(),
        session_id=session,
        run_index=run_index,
        alert=None,
        ts=ts,
        timestamp="2026-05-06T09:14:07Z",
        playground="GO-Mars",
        event_id="5120007",
        detail="6 identical reruns",
        evidence=TriggerEvidence(recent_distances=[0] * 6, zero_streak=6),
    )
    return FeedbackRequest(
        request_id=derived_id("feedback", trigger.trigger_id),
        lane=Lane.PROACTIVE,
        student_key=student,
        student_id=student.upper(),
        session_id=session,
        playground="GO-Mars",
        ts=ts,
        trigger=trigger,
        decision=decision,  # type: ignore[arg-type]
        suppress_reason=reason,
        metrics=METRICS if decision == "act" else None,
        program_xml=PROGRAM if decision == "act" else None,
    )


def reactive(
    student: str,
    question: str = "why doesnt my arm move",
    *,
    session: str = "s1",
    canned: str | None = None,
    chat_id: str | None = None,
) -> FeedbackRequest:
    chat_id = chat_id or str(uuid.uuid4())
    return FeedbackRequest(
        request_id=derived_id("feedback", chat_id),
        lane=Lane.REACTIVE,
        student_key=student,
        student_id=student.upper(),
        session_id=session,
        playground="GO-Mars",
        ts=1100.0,
        question=question,
        chat_request_id=chat_id,
        canned=canned,  # type: ignore[arg-type]
        metrics=None if canned else METRICS,
        program_xml=None if canned else PROGRAM,
    )


async def rows_of(pool: asyncpg.Pool, student: str) -> list[messages.MessageRow]:
    return await messages.messages_after(pool, student, 0, roles=("student", "assistant"))


def situation(prompt: str) -> str:
    match = re.search(r"What is happening now.*?\n(.*?)\n\nRecent chat:", prompt, re.S)
    assert match
    return match.group(1)


# --- proactive -------------------------------------------------------------------------


async def test_acted_trigger_stores_one_message_and_publishes_it(
    pool: asyncpg.Pool, db_settings: Settings, fake: FakeOllama
) -> None:
    r, student = rig(pool, db_settings, fake), new_student()
    request = proactive(student)
    result = await r.service.handle(request)
    assert result.status == "acted" and result.generated
    stored = await rows_of(pool, student)
    assert len(stored) == 1
    row = stored[0]
    assert (row.role, row.origin, row.model) == ("assistant", Lane.PROACTIVE, "llama3.2")
    assert row.classes == ("Diagnose", "Reassure")
    assert row.response_id == nudge_response_id(request.trigger.trigger_id)  # type: ignore[union-attr]
    assert "`drive for`" in row.text
    [message] = r.recorder.of(FeedbackMessage)
    [outcome] = r.recorder.of(NudgeOutcome)
    assert message.message_id == row.id and message.text == row.text
    assert message.trigger_type == "wheel_spin"
    assert (outcome.status, outcome.message_id, outcome.response_id) == (
        "acted",
        row.id,
        row.response_id,
    )
    trig = await triggers.get_trigger(pool, request.trigger.trigger_id)  # type: ignore[union-attr]
    assert trig is not None and (trig.status, trig.response_id) == ("acted", row.response_id)
    assert len(fake.prompts) == 1
    assert r.recorder.outcomes == [("acted", Lane.PROACTIVE)]
    [timing] = r.recorder.timings
    assert timing.model_s > 0 and timing.service_s >= timing.model_s
    assert (await messages.get_message(pool, row.response_id)).published_at is not None  # type: ignore[union-attr]
    await r.llm.aclose()


async def test_redelivery_republishes_without_a_second_row_or_call(
    pool: asyncpg.Pool, db_settings: Settings, fake: FakeOllama
) -> None:
    r, student = rig(pool, db_settings, fake), new_student()
    request = proactive(student)
    first = await r.service.handle(request)
    again = await r.service.handle(request)
    concurrent = await asyncio.gather(*(r.service.handle(request) for _ in range(3)))
    assert again.status == "acted" and not again.generated
    assert all(c.status == "acted" and not c.generated for c in concurrent)
    assert len(await rows_of(pool, student)) == 1
    assert len(fake.prompts) == 1
    ids = {m.message_id for m in r.recorder.of(FeedbackMessage)}
    assert ids == {first.message.message_id}  # type: ignore[union-attr]
    assert r.recorder.outcomes == [("acted", Lane.PROACTIVE)]
    await r.llm.aclose()


async def test_concurrent_first_deliveries_generate_once(
    pool: asyncpg.Pool, db_settings: Settings, fake: FakeOllama
) -> None:
    fake.configure(delay_s=0.2)
    r, student = rig(pool, db_settings, fake), new_student()
    request = proactive(student)
    results = await asyncio.gather(*(r.service.handle(request) for _ in range(4)))
    assert sum(res.generated for res in results) == 1
    assert len(fake.prompts) == 1
    assert len(await rows_of(pool, student)) == 1
    await r.llm.aclose()


async def test_suppressed_is_recorded_with_its_reason(
    pool: asyncpg.Pool, db_settings: Settings, fake: FakeOllama
) -> None:
    r, student = rig(pool, db_settings, fake), new_student()
    request = proactive(student, decision="suppress", reason="cooldown")
    result = await r.service.handle(request)
    await r.service.handle(request)
    assert result.status == "suppressed"
    trig = await triggers.get_trigger(pool, request.trigger.trigger_id)  # type: ignore[union-attr]
    assert trig is not None and (trig.status, trig.reason) == ("suppressed", "cooldown")
    assert fake.prompts == []
    assert await rows_of(pool, student) == []
    outcomes = r.recorder.of(NudgeOutcome)
    assert [(o.status, o.reason) for o in outcomes] == [("suppressed", "cooldown")] * 2
    assert r.recorder.outcomes == [("suppressed", Lane.PROACTIVE)]
    await r.llm.aclose()


async def test_model_down_then_back_delivers_exactly_once(
    pool: asyncpg.Pool, db_settings: Settings, fake: FakeOllama
) -> None:
    r, student = rig(pool, db_settings, fake), new_student()
    request = proactive(student)
    tid = request.trigger.trigger_id  # type: ignore[union-attr]
    fake.configure(mode="fail")
    result = await r.service.handle(request)
    assert result.status == "pending"
    await r.service.handle(request)  # a re-delivery while still down
    trig = await triggers.get_trigger(pool, tid)
    assert trig is not None and trig.status == "pending" and trig.attempts == 2
    assert trig.last_error is not None and "500" in trig.last_error
    assert [o.status for o in r.recorder.of(NudgeOutcome)] == ["pending"]
    report = await r.service.retry_pending()
    assert (report.delivered, report.still_pending) == (0, 1)
    fake.configure(mode="ok")
    report = await r.service.retry_pending()
    assert report.delivered == 1
    assert (await r.service.retry_pending()).delivered == 0
    await r.service.handle(request)  # a late re-delivery re-publishes only
    stored = await rows_of(pool, student)
    assert len(stored) == 1
    assert len(fake.prompts) == 4  # 3 failed passes, 1 answer
    assert [o.status for o in r.recorder.of(NudgeOutcome)] == ["pending", "acted", "acted"]
    assert {m.message_id for m in r.recorder.of(FeedbackMessage)} == {stored[0].id}
    assert (await triggers.get_trigger(pool, tid)).status == "acted"  # type: ignore[union-attr]
    await r.llm.aclose()


async def test_template_fallback_records_the_template_model(
    pool: asyncpg.Pool, db_settings: Settings, fake: FakeOllama
) -> None:
    r, student = rig(pool, db_settings, fake, llm_fallback_template=True), new_student()
    fake.configure(mode="down")
    result = await r.service.handle(proactive(student))
    assert result.status == "acted"
    [row] = await rows_of(pool, student)
    assert row.model == "template"
    assert row.text
    assert r.recorder.model_calls[0][1:] == (False, "LLMUnavailable")
    await r.llm.aclose()


async def test_gives_up_after_the_attempt_limit(pool: asyncpg.Pool, db_settings: Settings, fake: FakeOllama) -> None:
    r, student = rig(pool, db_settings, fake, feedback_max_attempts=2), new_student()
    fake.configure(mode="fail")
    request = proactive(student)
    assert (await r.service.handle(request)).status == "pending"
    await r.service.retry_pending()
    trig = await triggers.get_trigger(pool, request.trigger.trigger_id)  # type: ignore[union-attr]
    assert trig is not None and (trig.status, trig.reason, trig.attempts) == (
        "failed",
        "gave_up",
        2,
    )
    assert [o.status for o in r.recorder.of(NudgeOutcome)] == ["pending", "failed"]
    fake.configure(mode="ok")
    assert (await r.service.retry_pending()).delivered == 0
    assert await rows_of(pool, student) == []
    await r.llm.aclose()


async def test_concurrent_retry_passes_deliver_each_nudge_once(
    pool: asyncpg.Pool, db_settings: Settings, fake: FakeOllama
) -> None:
    first, second = rig(pool, db_settings, fake), rig(pool, db_settings, fake)
    student = new_student()
    fake.configure(mode="fail")
    batch = [proactive(student, run_index=i) for i in range(6)]
    for request in batch:
        assert (await first.service.handle(request)).status == "pending"
    fake.configure(mode="ok", delay_s=0.05)
    before = len(fake.prompts)
    reports = await asyncio.gather(
        first.service.retry_pending(), second.service.retry_pending(), first.service.retry_pending()
    )
    assert sum(rep.delivered for rep in reports) == 6
    assert len(fake.prompts) - before == 6
    stored = await rows_of(pool, student)
    assert len(stored) == 6
    assert len({row.response_id for row in stored}) == 6
    for rig_ in (first, second):
        await rig_.llm.aclose()


async def test_unpublished_message_is_published_by_the_sweeper(
    pool: asyncpg.Pool, db_settings: Settings, fake: FakeOllama
) -> None:
    r, student = rig(pool, db_settings, fake), new_student()
    r.recorder.fail_next = 1
    with pytest.raises(ConnectionError):
        await r.service.handle(proactive(student))
    [row] = await rows_of(pool, student)
    assert row.published_at is None
    report = await r.service.retry_pending()
    assert report.republished >= 1
    assert row.id in {m.message_id for m in r.recorder.of(FeedbackMessage)}
    assert (await messages.get_message(pool, row.response_id)).published_at is not None  # type: ignore[union-attr]
    await r.llm.aclose()


@pytest.mark.parametrize("kind", list(TriggerType))
async def test_no_label_word_reaches_the_prompt_fact_or_a_message(
    pool: asyncpg.Pool, db_settings: Settings, fake: FakeOllama, kind: TriggerType
) -> None:
    for fallback in (False, True):
        r, student = rig(pool, db_settings, fake, llm_fallback_template=fallback), new_student()
        fake.configure(mode="down" if fallback else "ok")
        await r.service.handle(proactive(student, kind))
        [row] = await rows_of(pool, student)
        assert contains_banned_word(row.text) is None, row.text
        await r.llm.aclose()
    for prompt in fake.prompts:
        assert contains_banned_word(situation(prompt)) is None


# --- reactive --------------------------------------------------------------------------


async def test_question_stored_by_the_gateway_is_answered_once(
    pool: asyncpg.Pool, db_settings: Settings, fake: FakeOllama
) -> None:
    r, student = rig(pool, db_settings, fake), new_student()
    request = reactive(student)
    qid = request.chat_request_id
    assert qid is not None
    await requests.record_question(pool, qid, student, None, "why doesnt my arm move")
    await messages.insert_message(
        pool,
        response_id=qid,
        student_key=student,
        session_id="s1",
        role="student",
        text="why doesnt my arm move",
        origin="reactive",
        request_id=qid,
    )
    result = await r.service.handle(request)
    again = await r.service.handle(request)
    assert result.status == again.status == "answered"
    assert result.generated and not again.generated
    question, answer = await rows_of(pool, student)
    assert (question.role, question.response_id) == ("student", qid)
    assert (answer.role, answer.origin, answer.request_id) == ("assistant", Lane.REACTIVE, qid)
    assert answer.response_id == answer_response_id(qid)
    assert answer.classes  # the policy's classes for the measured pattern
    assert len(fake.prompts) == 1
    assert "why doesnt my arm move" in fake.prompts[0]
    row = await requests.get_question(pool, qid)
    assert row is not None and (row.status, row.response_id, row.session_id) == (
        "answered",
        answer.response_id,
        "s1",
    )
    assert [m.message_id for m in r.recorder.of(FeedbackMessage)] == [answer.id, answer.id]
    assert r.recorder.of(NudgeOutcome) == []
    await r.llm.aclose()


async def test_question_not_stored_before_is_stored_too(
    pool: asyncpg.Pool, db_settings: Settings, fake: FakeOllama
) -> None:
    r, student = rig(pool, db_settings, fake), new_student()
    await r.service.handle(reactive(student, "how do I pick up the sample?"))
    question, answer = await rows_of(pool, student)
    assert (question.role, question.text) == ("student", "how do I pick up the sample?")
    assert answer.role == "assistant"
    await r.llm.aclose()


async def test_recent_chat_reaches_the_prompt(pool: asyncpg.Pool, db_settings: Settings, fake: FakeOllama) -> None:
    r, student = rig(pool, db_settings, fake), new_student()
    await r.service.handle(proactive(student))
    await r.service.handle(reactive(student, "what should I change?"))
    nudge_text = (await rows_of(pool, student))[0].text
    assert f"Assistant: {nudge_text}" in fake.prompts[1]
    assert "Student: what should I change?" not in fake.prompts[1]
    await r.llm.aclose()


@pytest.mark.parametrize("canned", ["run_in_progress", "no_session"])
async def test_canned_reply_is_stored_without_the_model(
    pool: asyncpg.Pool, db_settings: Settings, fake: FakeOllama, canned: str
) -> None:
    r, student = rig(pool, db_settings, fake), new_student()
    result = await r.service.handle(reactive(student, "help", canned=canned))
    assert result.status == "answered"
    _, answer = await rows_of(pool, student)
    assert (answer.classes, answer.model) == ((), None)
    assert "again" in answer.text
    assert fake.prompts == []
    await r.llm.aclose()


async def test_pending_question_is_answered_by_the_retry(
    pool: asyncpg.Pool, db_settings: Settings, fake: FakeOllama
) -> None:
    r, student = rig(pool, db_settings, fake), new_student()
    fake.configure(mode="fail")
    request = reactive(student)
    assert (await r.service.handle(request)).status == "pending"
    assert len(await rows_of(pool, student)) == 1  # the question only
    fake.configure(mode="ok")
    report = await r.service.retry_pending()
    assert report.delivered == 1
    assert len(await rows_of(pool, student)) == 2
    assert (await r.service.retry_pending()).delivered == 0
    await r.llm.aclose()


# --- vexnudge ask ----------------------------------------------------------------------


async def _chat_request(settings: Settings, topic: str, request_id: str) -> ChatRequest:
    for _ in range(150):
        async for record in read_to_end(settings, [topic]):
            chat = decode(ChatRequest, record.value or b"")
            if chat.request_id == request_id:
                assert record.key == chat.student_key.encode()
                return chat
        await asyncio.sleep(0.2)
    raise AssertionError(f"no ChatRequest {request_id} on {topic}")


async def test_ask_command_publishes_the_question_and_waits_for_the_reply(
    pool: asyncpg.Pool, db_settings: Settings, fake: FakeOllama, unique_prefix: str
) -> None:
    settings = db_settings.model_copy(update={"topic_prefix": unique_prefix})
    r, request_id = rig(pool, settings, fake), str(uuid.uuid4())
    env = {
        **os.environ,
        "DATABASE_URL": settings.database_url.get_secret_value(),
        "KAFKA_BOOTSTRAP_SERVERS": settings.kafka_bootstrap_servers,
        "TOPIC_PREFIX": unique_prefix,
        "TOPIC_PARTITIONS": str(settings.topic_partitions),
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "vexnudge.cli",
        "ask",
        " Otter12 ",
        "-",
        "how do I turn?",
        "--request-id",
        request_id,
        "--wait",
        "--timeout",
        "60",
        env=env,
        cwd=PROJECT_ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    chat = await _chat_request(settings, settings.topic("vex.chat.requests"), request_id)
    assert (chat.student_key, chat.student_id, chat.session_id, chat.text, chat.source) == (
        "otter12",
        "Otter12",
        None,
        "how do I turn?",
        "cli",
    )
    question = await requests.get_question(pool, request_id)
    assert question is not None and question.status == "pending"
    # the analysis stage: no session known for this student yet → a canned reply
    result = await r.service.handle(answer_request(chat, None, None))
    assert result.status == "answered"
    out, err = await asyncio.wait_for(proc.communicate(), timeout=90)
    assert proc.returncode == 0, err.decode()
    assert out.decode().splitlines() == [request_id, CANNED_REPLIES["no_session"]]
    rows = await messages.messages_after(pool, "otter12", 0, roles=("student", "assistant"))
    mine = [m for m in rows if m.request_id == request_id]
    assert [m.role for m in mine] == ["student", "assistant"]
    await r.llm.aclose()
