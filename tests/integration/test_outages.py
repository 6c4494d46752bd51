"""Outages for real: PostgreSQL and the broker stopped and started again while a
worker replays the sample classroom with the proactive lane on.

Each test runs the service it stops in a private stack of its own
(:mod:`tests.fakes.private_stack`: the project's stack code on other ports and
folders), never the shared one.  What must hold afterwards is the product's
promise (README, "Guarantees"; docs/persistence.md):

- **nothing lost**: every fire the pure engine and nudge policy decide (the
  oracle, = a run without an outage) is stored with its status, and every
  acted fire has its message;
- **nothing twice**: PostgreSQL holds exactly one row per fire and exactly one
  assistant message per acted fire (counted as a multiset).  On ``vex.feedback``
  a stored message may be *re-published* (the documented at-least-once hand-over:
  "re-delivery re-publishes the stored message; consumers dedupe by
  ``message_id``", e.g. a commit that landed while marking it published
  failed), so there each message id must be one stored message and every copy
  of it must be that same message, byte for byte: a consumer that drops
  repeated ids (the gateway does) shows each nudge once.  A second *message*
  for a fire would be a second id, and is counted as a failure.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import aiohttp
import asyncpg
import pytest
from aiohttp.test_utils import TestServer
from aiokafka.errors import KafkaError
from pydantic import SecretStr

from delivery.gateway import tokens
from delivery.gateway.app import build_app
from streams.local import read_lines
from tests.datafiles import SAMPLE_CLASSROOM
from tests.fakes.private_stack import PrivateStack, private_stack
from tests.fakes.process import fake_ollama_subprocess
from tests.fakes.scratch_db import scratch_database
from tests.integration.pipeline import isolated, nudge_oracle, read_values, start_worker
from tests.integration.test_resilience import assert_golden_triggers, assert_one_row_per_trigger
from topology.kafka_admin import committed_offsets, ensure_topics, wait_analysed, wait_consumed
from topology.schemas import FeedbackMessage, NormalizedEvent, decode
from topology.settings import Settings
from vexnudge.producer import produce_lines
from vexnudge.replay import ReplayResult, collect_outputs, delete_topics, horizon_of, send_final_ticks
from vexnudge.workerproc import WorkerProcess

pytestmark = pytest.mark.integration

R = TypeVar("R")
LINES = read_lines(SAMPLE_CLASSROOM.read_bytes())
OUTAGE_S = 6.0
ASSISTANT_MESSAGES = "select count(*) from chat.messages where role = 'assistant'"


@dataclass
class Lane:
    """A private service, the test's settings (own topics, proactive lane on), the fake model."""

    stack: PrivateStack
    settings: Settings
    model_url: str


def oracle(settings: Settings) -> dict[str, tuple[str, str | None]]:
    """trigger id → (status, reason) as the pure engine and nudge policy decide them."""
    return nudge_oracle(settings, LINES)


def lane_worker(lane: Lane, *extra: str) -> WorkerProcess:
    s = lane.settings
    return start_worker(
        s,
        "replay",
        "--set",
        "trigger_daemon_enabled=true",
        "--set",
        f"database_url={s.database_url.get_secret_value()}",
        "--set",
        f"kafka_bootstrap_servers={s.kafka_bootstrap_servers}",
        "--set",
        f"ollama_host={lane.model_url}",
        "--set",
        "feedback_retry_after_s=1",
        *extra,
    )


async def db_value(settings: Settings, sql: str) -> int:
    conn = await asyncpg.connect(settings.database_url.get_secret_value(), timeout=5)
    try:
        return int(await conn.fetchval(sql))
    finally:
        await conn.close()


async def settled(make: Callable[[], Awaitable[R]], within_s: float = 60.0) -> R:
    """``await make()``, again while the broker answers that the group coordinator is
    not ready (a new broker, or one that just came back and is loading its offsets)."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            return await make()
        except KafkaError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


async def raw_committed(settings: Settings) -> int:
    offsets = await settled(lambda: committed_offsets(settings, settings.app_id, settings.topic("vex.telemetry.raw")))
    return sum(offsets.values())


async def drain(settings: Settings, until_no_pending_s: float = 90.0) -> None:
    """Wait until the worker consumed everything (final ticks included) and no nudge is pending."""
    await settled(lambda: wait_analysed(settings, 180))
    horizon = horizon_of(LINES)
    assert horizon is not None
    await send_final_ticks(settings, horizon)
    for topic in ("vex.clock", "vex.feedback.requests"):
        await settled(lambda topic=topic: wait_consumed(settings, settings.app_id, settings.topic(topic), 180))
    deadline = time.monotonic() + until_no_pending_s
    while time.monotonic() < deadline and await db_value(
        settings, "select count(*) from event_logs.agent_triggers where status = 'pending'"
    ):
        await asyncio.sleep(0.5)


async def _stored(settings: Settings) -> tuple[list[asyncpg.Record], list[asyncpg.Record], int]:
    conn = await asyncpg.connect(settings.database_url.get_secret_value(), timeout=5)
    try:
        fires = await conn.fetch("select trigger_id::text, status, reason from event_logs.agent_triggers")
        messages = await conn.fetch(
            "select id, response_id::text, trigger_id::text, message_text from chat.messages where role = 'assistant'"
        )
        events = int(await conn.fetchval("select count(*) from event_logs.events"))
    finally:
        await conn.close()
    return fires, messages, events


def assert_nothing_lost_nothing_twice(settings: Settings, expected: dict[str, tuple[str, str | None]]) -> Counter[int]:
    """The database holds the oracle's fires and one message per acted fire; the
    feedback topic carries exactly those messages (copies only of the same
    message).  Returns how often each message id was published."""
    fires, messages, events = asyncio.run(_stored(settings))
    per_fire = Counter(r["trigger_id"] for r in fires)
    assert {tid: n for tid, n in per_fire.items() if n > 1} == {}
    assert {r["trigger_id"]: (r["status"], r["reason"]) for r in fires} == expected
    acted = {tid for tid, (status, _) in expected.items() if status == "acted"}
    per_acted = Counter(m["trigger_id"] for m in messages)
    assert per_acted == Counter(acted), "exactly one stored message per acted fire, none for others"

    topics = asyncio.run(read_values(settings, ["vex.feedback", "vex.events"]))
    published = [decode(FeedbackMessage, value) for _, value in topics["vex.feedback"]]
    copies: Counter[int] = Counter(m.message_id for m in published)
    stored_ids = {m["id"]: m for m in messages}
    assert set(copies) == set(stored_ids), "every stored message published, nothing else"
    for m in published:
        row = stored_ids[m.message_id]
        assert (m.response_id, m.trigger_id, m.text) == (row["response_id"], row["trigger_id"], row["message_text"])
    first = {m.message_id: m for m in published}
    assert all(m == first[m.message_id] for m in published), "a re-published id differs from the first copy"

    # The event store (its own consumer group, also held by the outage) kept every accepted event once.
    accepted = {(e.student_key, e.event_id) for e in (decode(NormalizedEvent, v) for _, v in topics["vex.events"])}
    assert events == len(accepted)
    return copies


@pytest.fixture
def pg_lane(stack: Settings, unique_prefix: str) -> Iterator[Lane]:
    """The shared broker (own topics), a private PostgreSQL, a fake Ollama subprocess."""
    with private_stack(stack, "postgres") as pg, fake_ollama_subprocess(mode="ok") as url:
        settings = isolated(pg.settings, unique_prefix, trigger_daemon_enabled=True, ollama_host=url)
        asyncio.run(ensure_topics(settings))
        try:
            yield Lane(pg, settings, url)
        finally:
            asyncio.run(delete_topics(settings))


def test_postgres_fast_shutdown_mid_replay_loses_and_duplicates_no_nudge(pg_lane: Lane) -> None:
    """PostgreSQL goes down (fast shutdown: every session cut, open transactions
    rolled back) once nudges are being delivered, stays down while the rest of
    the classroom streams in, and comes back: the worker stays up, holds its
    feedback and event-store streams, and ends with exactly the outcome of a run
    without the outage."""
    lane, s = pg_lane, pg_lane.settings
    expected = oracle(s)
    acted = sum(status == "acted" for status, _ in expected.values())
    assert acted >= 5

    async def scenario() -> tuple[int, int]:
        worker = lane_worker(lane)
        producing = asyncio.ensure_future(produce_lines(s, LINES, rate=150))
        try:
            deadline = time.monotonic() + 90
            while (delivered := await db_value(s, ASSISTANT_MESSAGES)) < 1:
                assert worker.alive and time.monotonic() < deadline, worker.log_tail()
                await asyncio.sleep(0.2)
            assert await asyncio.to_thread(lane.stack.stop, "postgres") == {"postgres": "stopped"}
            down_at = await raw_committed(s)
            await asyncio.sleep(OUTAGE_S)  # the replay goes on; requests and events pile up
            assert worker.alive, worker.log_tail()
            assert await raw_committed(s) > down_at, "the analysis went on without the database"
            await asyncio.to_thread(lane.stack.up, "postgres")
            await producing
            await drain(s)
            assert worker.alive, worker.log_tail()
            return down_at, delivered
        finally:
            producing.cancel()
            worker.stop()

    down_at, delivered = asyncio.run(scenario())
    assert 0 < down_at < len(LINES) and delivered < acted, "the outage began mid-replay, mid-lane"
    assert_nothing_lost_nothing_twice(s, expected)


@pytest.fixture
def kafka_lane(stack: Settings, unique_prefix: str) -> Iterator[Lane]:
    """A private broker, a scratch database on the shared PostgreSQL, a fake Ollama subprocess."""
    with (
        private_stack(stack, "kafka") as broker,
        scratch_database(broker.settings) as db,
        fake_ollama_subprocess(mode="ok") as url,
    ):
        settings = isolated(db, unique_prefix, trigger_daemon_enabled=True, ollama_host=url)
        asyncio.run(ensure_topics(settings))
        yield Lane(broker, settings, url)  # the broker and its topics go with the private stack


def test_broker_stopped_and_restarted_mid_run_gives_the_golden_triggers_and_each_nudge_once(kafka_lane: Lane) -> None:
    """The only broker stops (a controlled shutdown) while the worker is a third
    of the way through the classroom and comes back on the same data.  The
    worker rides it out (its clients reconnect; it is not restarted); the rest
    of the classroom is sent once the broker is back.  Afterwards the trigger
    ids are the golden set (a re-published id only as a copy of the same fire),
    the database holds every fire and nudge once, and no nudge is a second
    message."""
    lane, s = kafka_lane, kafka_lane.settings
    expected = oracle(s)
    half = len(LINES) // 2

    async def scenario() -> tuple[int, bool, ReplayResult]:
        worker = lane_worker(lane)
        try:
            await produce_lines(s, LINES[:half], rate=300)
            deadline = time.monotonic() + 90
            while (down_at := await raw_committed(s)) < len(LINES) // 3:
                assert worker.alive and time.monotonic() < deadline, worker.log_tail()
                await asyncio.sleep(0.1)
            assert await asyncio.to_thread(lane.stack.stop, "kafka") == {"kafka": "stopped"}
            await asyncio.sleep(OUTAGE_S)
            await asyncio.to_thread(lane.stack.up, "kafka")
            survived = worker.alive
            assert survived, worker.log_tail()
            await produce_lines(s, LINES[half:], rate=300)
            await drain(s)
            assert worker.alive, worker.log_tail()
            result = ReplayResult()
            await collect_outputs(s, result)
            return down_at, survived, result
        finally:
            worker.stop()

    down_at, survived, result = asyncio.run(scenario())
    assert 0 < down_at < len(LINES) and survived
    assert_golden_triggers(result.observed.triggers, crashed=True)
    assert_one_row_per_trigger(s)
    assert_nothing_lost_nothing_twice(s, expected)


# --- the gateway's 503 path --------------------------------------------------------------

SECRET = "outage-test-token-secret-0123456789abcdef"
ADMIN = "outage-test-admin-token-0123456789abcdef"
#: A dependency that is down must be answered within this, not waited for (no hang).
ANSWER_WITHIN_S = 12.0


async def _call(
    http: aiohttp.ClientSession, method: str, url: str, **kwargs: object
) -> tuple[int, dict[str, object], float]:
    """Status, JSON body (with the Retry-After header under ``retry_after``) and seconds taken."""
    started = time.monotonic()
    async with http.request(method, url, **kwargs) as response:  # type: ignore[arg-type]
        body = await response.json(content_type=None)
        body["retry_after"] = response.headers.get("Retry-After")
        return response.status, body, time.monotonic() - started


def test_gateway_answers_503_while_postgres_is_down_and_recovers(stack: Settings, unique_prefix: str) -> None:
    """With PostgreSQL stopped (fast shutdown), the endpoints that need it answer
    503 with a JSON error that names the problem — not a 500, not a hang — and
    the same requests succeed once it is back (the pool reconnects; the gateway
    is not restarted)."""
    with private_stack(stack, "postgres") as pg:
        settings = pg.settings.model_copy(
            update={"topic_prefix": unique_prefix, "token_secret": SecretStr(SECRET), "admin_token": SecretStr(ADMIN)}
        )
        asyncio.run(_gateway_outage(pg, settings))


async def _gateway_outage(pg: PrivateStack, settings: Settings) -> None:
    who = f"stu-{uuid.uuid4().hex[:10]}"
    token = tokens.issue(SECRET.encode(), who, ttl_s=600, now=time.time())
    server = TestServer(build_app(settings), host="127.0.0.1")
    await server.start_server()
    base = str(server.make_url("")).rstrip("/")
    student = {"Authorization": f"Bearer {token}"}
    admin = {"Authorization": f"Bearer {ADMIN}"}

    async def probe(http: aiohttp.ClientSession, n: int) -> dict[str, tuple[int, dict[str, object], float]]:
        return {
            "question": await _call(
                http,
                "POST",
                f"{base}/v1/students/{who}/messages",
                json={"text": f"why does my robot stop? ({n})", "session_id": "s1"},
                headers={**student, "Idempotency-Key": f"q-{n}"},
            ),
            "tick": await _call(
                http, "POST", f"{base}/admin/tick", json={"student_id": who, "session_id": "s1"}, headers=admin
            ),
            "healthz": await _call(http, "GET", f"{base}/healthz"),
        }

    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=ANSWER_WITHIN_S * 2)) as http:
            up = await probe(http, 1)
            assert {k: v[0] for k, v in up.items()} == {"question": 202, "tick": 200, "healthz": 200}, up
            assert await asyncio.to_thread(pg.stop, "postgres") == {"postgres": "stopped"}
            down = await probe(http, 2)
            assert {k: v[0] for k, v in down.items()} == {"question": 503, "tick": 503, "healthz": 503}, down
            assert down["question"][1]["error"] == down["tick"][1]["error"] == "unavailable"
            assert down["question"][1]["retry_after"] == down["tick"][1]["retry_after"] == "5"
            assert down["healthz"][1]["database"] is False
            assert all(seconds < ANSWER_WITHIN_S for _, _, seconds in down.values()), down
            await asyncio.to_thread(pg.up, "postgres")
            again = await probe(http, 2)  # the refused question again, same key: stored now, once
            assert {k: v[0] for k, v in again.items()} == {"question": 202, "tick": 200, "healthz": 200}, again
            assert again["question"][1]["duplicate"] is False
    finally:
        await server.close()
    questions = await db_value(settings, f"select count(*) from chat.requests where student_key = '{who}'")
    assert questions == 2  # the first and the one refused while down, each stored once
