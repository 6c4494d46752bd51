"""Hostile lines through the real broker and a running worker (all roles, its own
database): the worker stays up, every rejected line is dead-lettered with its
reason (the one too large for the broker by the producer, truncated with its
length and SHA-256), a NUL is stored as U+FFFD, and every honest student's
output equals the golden file exactly."""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter

import asyncpg
import pytest

from streams.local import read_lines
from streams.summary import build_summary
from tests.datafiles import SAMPLE_CLASSROOM, golden_for
from tests.fakes.scratch_db import scratch_database
from tests.hostile.lines import HOSTILE_PREFIX, mixed_in
from tests.integration.pipeline import isolated, run
from vexnudge.replay import delete_topics, replay
from vexnudge.workerproc import WorkerProcess

pytestmark = pytest.mark.integration


async def stored_error_messages(url: str, student_prefix: str) -> list[str]:
    """The stored ``error_message`` of the hostile students' events (waits for the store)."""
    conn = await asyncpg.connect(url)
    try:
        for _ in range(150):
            rows = await conn.fetch(
                "select record->>'error_message' as m from event_logs.events "
                "where student_key like $1 and record->>'error_message' is not null",
                student_prefix + "%",
            )
            if rows:
                return [r["m"] for r in rows]
            await asyncio.sleep(0.2)
        return []
    finally:
        await conn.close()


def test_a_classroom_with_hostile_lines_replays_exactly_for_every_honest_student(stack, unique_prefix) -> None:
    lines = read_lines(SAMPLE_CLASSROOM.read_bytes())
    mixed, inserted = mixed_in(lines, seed=11, large=1_200_000, batches=2, flood=40)
    with scratch_database(stack) as db:
        settings = isolated(db, unique_prefix)
        url = settings.database_url.get_secret_value()
        worker = WorkerProcess(
            settings.app_id,
            settings.topic_prefix,
            clock="replay",
            extra_args=["--commit-interval", "0.2"],
            env={"DATABASE_URL": url, "MAX_SESSIONS_PER_STUDENT": "16"},
        ).start()
        try:
            result = run(replay(settings, mixed, timeout_s=240, worker=worker))
            stored = run(stored_error_messages(url, HOSTILE_PREFIX))
        finally:
            run(delete_topics(settings))
    assert result.produce.dead_lettered == sum(1 for h in inserted if h.reason == "too_large")
    # every rejected hostile line has its dead letter with its reason
    golden = golden_for(SAMPLE_CLASSROOM)
    expected = Counter(golden["input_report"]["rejected"])
    expected.update(h.reason for h in inserted if h.reason)
    ingest_dead = [d for d in result.observed.dead if d.stage == "ingest"]
    assert Counter(d.reason.value for d in ingest_dead) == expected
    oversize = [d for d in ingest_dead if d.reason.value == "too_large"]
    originals = {h.line for h in inserted if h.reason == "too_large"}
    for dead in oversize:
        assert dead.original_truncated and dead.original_length is not None and dead.original_length > 1_000_000
        assert any(hashlib.sha256(line).hexdigest() == dead.original_sha256 for line in originals)
    # the NUL reached the event store as U+FFFD
    assert stored and all("\x00" not in m for m in stored) and any("bad\ufffdbyte" == m for m in stored)
    # honest students: exactly the golden sessions
    summary = build_summary(
        result.observed,
        input_name=SAMPLE_CLASSROOM.name,
        input_sha256="-",
        input_report=result.input_report(len(mixed)),
    )
    honest = [s for s in summary["sessions"] if not s["student_id"].startswith(HOSTILE_PREFIX)]
    assert [s["session_id"] for s in honest] == [s["session_id"] for s in golden["sessions"]]
    for ours, theirs in zip(honest, golden["sessions"], strict=True):
        assert ours == theirs, ours["session_id"]
    # the hostile students' bomb runs were unscored, not fatal
    hostile_unscored = Counter(
        d.reason.value
        for d in result.observed.dead
        if d.stage == "analysis" and (d.student_key or "").startswith(HOSTILE_PREFIX)
    )
    assert hostile_unscored["xml_error"] == 2 * 3
