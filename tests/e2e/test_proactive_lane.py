"""The proactive lane end to end: real broker, real Postgres, a fake Ollama.

The sample classroom is replayed with the lane on; the database must hold
exactly what the pure oracle (the same engine and policy, in process) decides:
every fire recorded once with its status, one stored message per acted fire,
none for the others — also across a SIGKILL of the worker and a model outage.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import asyncpg
import pytest

from streams.local import read_lines
from tests.datafiles import SAMPLE_CLASSROOM
from tests.fakes.process import fake_ollama_subprocess
from tests.fakes.scratch_db import scratch_database
from tests.integration.pipeline import isolated, nudge_oracle, start_worker
from topology.kafka_admin import committed_offsets, ensure_topics, wait_analysed, wait_consumed
from topology.settings import Settings
from vexnudge.producer import produce_lines
from vexnudge.replay import delete_topics, horizon_of, send_final_ticks
from vexnudge.workerproc import WorkerProcess

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

LABEL_WORDS = re.compile(r"wheel|spin|trigger|resilien|explorer|iterative|inactive", re.I)
LINES = read_lines(SAMPLE_CLASSROOM.read_bytes())


@dataclass
class Lane:
    settings: Settings
    model_url: str


@pytest.fixture
def lane(stack: Settings, unique_prefix: str) -> Iterator[Lane]:
    with scratch_database(stack) as db, fake_ollama_subprocess(mode="ok") as url:
        settings = isolated(db, unique_prefix, trigger_daemon_enabled=True, ollama_host=url)
        asyncio.run(ensure_topics(settings))
        try:
            yield Lane(settings, url)
        finally:
            asyncio.run(delete_topics(settings))


def worker(lane: Lane, *extra: str) -> WorkerProcess:
    s = lane.settings
    return start_worker(
        s,
        "replay",
        "--set",
        "trigger_daemon_enabled=true",
        "--set",
        f"database_url={s.database_url.get_secret_value()}",
        "--set",
        f"ollama_host={lane.model_url}",
        *extra,
    )


def oracle(settings: Settings) -> dict[str, tuple[str, str | None]]:
    """trigger id → (status, reason) as the pure engine and nudge policy decide them."""
    return nudge_oracle(settings, LINES)


async def drain(settings: Settings, until_no_pending_s: float = 90.0) -> None:
    """Wait until the worker consumed everything and no nudge is pending."""
    await wait_analysed(settings, 180)
    horizon = horizon_of(LINES)
    assert horizon is not None
    await send_final_ticks(settings, horizon)
    for topic in ("vex.clock", "vex.feedback.requests"):
        await wait_consumed(settings, settings.app_id, settings.topic(topic), 180)
    deadline = time.monotonic() + until_no_pending_s
    while await pending(settings) and time.monotonic() < deadline:
        await asyncio.sleep(0.5)


async def pending(settings: Settings) -> int:
    conn = await asyncpg.connect(settings.database_url.get_secret_value())
    try:
        return int(await conn.fetchval("select count(*) from event_logs.agent_triggers where status = 'pending'"))
    finally:
        await conn.close()


async def stored(settings: Settings) -> tuple[dict[str, tuple[str, str | None]], list[asyncpg.Record]]:
    conn = await asyncpg.connect(settings.database_url.get_secret_value())
    try:
        rows = await conn.fetch("select trigger_id::text, status, reason from event_logs.agent_triggers")
        msgs = await conn.fetch(
            "select trigger_id::text, message_text, model, origin from chat.messages where origin = 'proactive'"
        )
    finally:
        await conn.close()
    return {r["trigger_id"]: (r["status"], r["reason"]) for r in rows}, msgs


def assert_matches_oracle(settings: Settings, expected: dict[str, tuple[str, str | None]]) -> list:
    got, messages = asyncio.run(stored(settings))
    assert got == expected
    acted = {tid for tid, (status, _) in expected.items() if status == "acted"}
    per_trigger = [m["trigger_id"] for m in messages]
    assert sorted(per_trigger) == sorted(acted)  # exactly one message per acted fire
    for m in messages:
        assert not LABEL_WORDS.search(m["message_text"]), m["message_text"]
    return messages


def test_replay_with_the_lane_on_stores_exactly_what_the_policy_decides(lane: Lane) -> None:
    expected = oracle(lane.settings)
    assert sum(status == "acted" for status, _ in expected.values()) >= 5
    w = worker(lane)
    try:
        asyncio.run(produce_lines(lane.settings, LINES))
        asyncio.run(drain(lane.settings))
    finally:
        w.stop()
    messages = assert_matches_oracle(lane.settings, expected)
    assert {m["model"] for m in messages} == {lane.settings.ollama_model}


def test_kill_9_mid_replay_neither_loses_nor_duplicates_a_nudge(lane: Lane) -> None:
    expected = oracle(lane.settings)

    async def scenario() -> None:
        first = worker(lane)
        producing = asyncio.ensure_future(produce_lines(lane.settings, LINES, rate=250))
        s = lane.settings
        while sum((await committed_offsets(s, s.app_id, s.topic("vex.telemetry.raw"))).values()) < len(LINES) // 2:
            assert first.alive, first.log_tail()
            await asyncio.sleep(0.1)
        first.kill()
        second = worker(lane)
        try:
            await producing
            await drain(s)
        finally:
            second.stop()

    asyncio.run(scenario())
    assert_matches_oracle(lane.settings, expected)


def _control(url: str, **changes: object) -> None:
    request = urllib.request.Request(
        f"{url}/_control",
        data=json.dumps(changes).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    urllib.request.urlopen(request, timeout=5).read()


def test_model_outage_delays_nudges_and_delivers_each_once_when_it_returns(lane: Lane) -> None:
    expected = oracle(lane.settings)
    _control(lane.model_url, mode="fail")
    w = worker(
        lane, "--set", "llm_fallback_template=false", "--set", "feedback_retry_after_s=1", "--set", "llm_max_retries=0"
    )
    try:
        asyncio.run(produce_lines(lane.settings, LINES))
        asyncio.run(drain(lane.settings, until_no_pending_s=0))
        waiting = asyncio.run(pending(lane.settings))
        assert waiting == sum(status == "acted" for status, _ in expected.values())
        _control(lane.model_url, mode="ok")
        deadline = time.monotonic() + 120
        while asyncio.run(pending(lane.settings)) and time.monotonic() < deadline:
            time.sleep(1)
    finally:
        w.stop()
    assert_matches_oracle(lane.settings, expected)


def test_without_a_model_the_template_answers_and_says_so(lane: Lane) -> None:
    expected = oracle(lane.settings)
    _control(lane.model_url, mode="fail")
    w = worker(lane, "--set", "llm_max_retries=0")
    try:
        asyncio.run(produce_lines(lane.settings, LINES))
        asyncio.run(drain(lane.settings))
    finally:
        w.stop()
    messages = assert_matches_oracle(lane.settings, expected)
    assert {m["model"] for m in messages} == {"template"}
