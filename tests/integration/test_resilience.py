"""Fire once across crashes and scale-out: a worker killed with SIGKILL midway
and restarted, and two workers in one group, each end with exactly the golden
set of trigger ids — none missing, none extra — counted as a multiset: an id
is published once without a crash, and after a crash or rebalance possibly
again but only as a copy of the same fire, while the idempotent sink keeps
exactly one row per id (see :func:`assert_golden_triggers`)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import asyncpg
import pytest

from streams.ids import trigger_id
from streams.local import read_lines
from tests.datafiles import SAMPLE_CLASSROOM, golden_for
from tests.fakes.scratch_db import scratch_database
from tests.integration.pipeline import isolated, on_own_topics, start_worker
from topology.kafka_admin import committed_offsets, end_offsets, wait_analysed, wait_consumed
from topology.settings import Settings
from vexnudge.disorder import arrival_order
from vexnudge.producer import produce_lines
from vexnudge.replay import ReplayResult, collect_outputs, horizon_of, send_final_ticks
from vexnudge.workerproc import WorkerProcess

pytestmark = pytest.mark.integration


def golden_triggers() -> dict[str, tuple[object, ...]]:
    """The golden trigger ids, each with a readable (session, type, run or alert)."""
    golden = golden_for(SAMPLE_CLASSROOM)
    out: dict[str, tuple[object, ...]] = {}
    for s in golden["sessions"]:
        key = s["student_id"].strip().lower()
        for t in s["triggers"]:
            out[trigger_id(key, s["session_id"], t["type"], t["run_index"])] = (
                s["session_id"],
                t["type"],
                t["run_index"],
            )
        for a in s["inactive"]:
            tid = trigger_id(key, s["session_id"], "inactive", idle_since_ts=a["idle_since_ts"], alert=a["alert"])
            out[tid] = (s["session_id"], "inactive", a["alert"], a["idle_since_ts"])
    return out


def golden_ids() -> set[str]:
    return set(golden_triggers())


def assert_golden_triggers(triggers: list[object], *, crashed: bool) -> Counter[str]:
    """The observed trigger ids are exactly the golden ones, counted as a multiset.

    How often may one id be published?  The stream agent publishes a batch's
    outputs *before* the state that records the batch as done and before the
    input offsets are committed (``topology.seam.outbox``; docs/operations.md,
    "Delivery guarantees").  So:

    - a run without a crash or rebalance (``crashed=False``) publishes every
      golden id exactly once;
    - after a crash (or a rebalance) the events between the last state write
      and the crash are processed again, and their triggers are published again
      under the *same* id (README: "a crash reproduces the same trigger ids").
      Then every golden id appears at least once, no other id appears, and every
      copy of an id is the same fire (same session, type, run or alert, time,
      evidence).  Consumers drop repeated ids; the sinks keep one row per id
      (checked where a test has them: :func:`assert_one_row_per_trigger`).

    :returns: how often each id was published.
    """
    golden = golden_triggers()
    seen: Counter[str] = Counter(t.trigger_id for t in triggers)  # type: ignore[attr-defined]
    first = {t.trigger_id: t for t in reversed(triggers)}  # type: ignore[attr-defined]
    missing = sorted(golden[i] for i in set(golden) - set(seen))
    extra = sorted(
        (t.session_id, t.type.value, t.run_index, t.alert, t.ts)  # type: ignore[attr-defined]
        for i, t in first.items()
        if i not in golden
    )
    assert not missing and not extra, f"missing {missing}; extra {extra}"
    repeated = {golden[i]: n for i, n in seen.items() if n > 1}
    if not crashed:
        assert repeated == {}, f"published more than once without a crash: {repeated}"
    differing = sorted({golden[t.trigger_id] for t in triggers if t != first[t.trigger_id]})  # type: ignore[attr-defined]
    assert differing == [], f"copies of one trigger id that are different fires: {differing}"
    return seen


async def _trigger_rows(settings: Settings) -> list[str]:
    conn = await asyncpg.connect(settings.database_url.get_secret_value(), timeout=5)
    try:
        return [r[0] for r in await conn.fetch("select trigger_id::text from event_logs.agent_triggers")]
    finally:
        await conn.close()


def assert_one_row_per_trigger(settings: Settings) -> None:
    """The idempotent sink (``event_logs.agent_triggers``) holds each golden fire exactly once."""
    rows = Counter(asyncio.run(_trigger_rows(settings)))
    assert rows == Counter(golden_ids()), (
        f"missing {sorted(golden_ids() - set(rows))}; extra {sorted(set(rows) - golden_ids())}; "
        f"repeated {sorted(i for i, n in rows.items() if n > 1)}"
    )


async def finish(settings: Settings, lines: list[bytes]) -> ReplayResult:
    await wait_analysed(settings, 180)
    horizon = horizon_of(lines)
    assert horizon is not None
    await send_final_ticks(settings, horizon)
    for topic in ("vex.clock", "vex.feedback.requests"):  # the feedback agent has stored every fire
        await wait_consumed(settings, settings.app_id, settings.topic(topic), 180)
    result = ReplayResult()
    await collect_outputs(settings, result)
    return result


async def raw_committed(settings: Settings) -> int:
    return sum((await committed_offsets(settings, settings.app_id, settings.topic("vex.telemetry.raw"))).values())


def kill_9_midway(
    settings: Settings, worker: Callable[[], WorkerProcess], disorder_s: float = 0.0
) -> tuple[ReplayResult, int, WorkerProcess]:
    """Replay the sample classroom, SIGKILL the worker a third of the way in, start
    another with ``worker()``; returns the outputs, the committed raw offset
    at the kill and the second worker.  ``disorder_s``: the lines arrive in a
    seeded order, each up to that many seconds late (their line numbers kept)."""
    arrived = arrival_order(read_lines(SAMPLE_CLASSROOM.read_bytes()), disorder_s, seed=9)
    lines, numbers = [line for _, line in arrived], [n for n, _ in arrived]

    async def scenario() -> tuple[ReplayResult, int, WorkerProcess]:
        first = worker()
        # two thirds first, the rest after the kill: however slow the machine, the kill
        # lands before the end of the input (the worker may have caught up with what it had)
        cut = 2 * len(lines) // 3
        producing = asyncio.ensure_future(produce_lines(settings, lines[:cut], rate=250, numbers=numbers[:cut]))
        deadline = time.monotonic() + 120
        try:
            while await raw_committed(settings) < len(lines) // 3:
                assert first.alive and time.monotonic() < deadline, first.log_tail()
                await asyncio.sleep(0.1)
        finally:
            first.kill()  # SIGKILL: no flush, no commit, no goodbye (and no worker left behind)
        killed_at = await raw_committed(settings)
        second = worker()
        try:
            await producing
            await produce_lines(settings, lines[cut:], rate=250, numbers=numbers[cut:])
            return await finish(settings, lines), killed_at, second
        finally:
            second.stop()

    result, killed_at, second = on_own_topics(settings, scenario)
    assert 0 < killed_at < len(lines)
    return result, killed_at, second


def db_worker(settings: Settings, *extra: str, datadir: Path | None = None) -> WorkerProcess:
    """A worker whose feedback agent records the fires in ``settings``' database."""
    return start_worker(
        settings, "replay", "--set", f"database_url={settings.database_url.get_secret_value()}", *extra, datadir=datadir
    )


def test_kill_9_midway_then_restart_fires_every_trigger_once(stack, unique_prefix) -> None:
    """On the topic every golden id at least once and copies only of the same
    fire (see :func:`assert_golden_triggers`); in the idempotent sink exactly once."""
    with scratch_database(stack) as db:
        settings = isolated(db, unique_prefix)
        result, _, second = kill_9_midway(settings, lambda: db_worker(settings))
        assert_golden_triggers(result.observed.triggers, crashed=True)
        assert_one_row_per_trigger(settings)
    # Every record reached the restarted worker's agent the first time: none was
    # dropped after its recovery and left for the commit-gap healer to re-read.
    assert second.datadir is not None
    assert "stuck at" not in (second.datadir / "worker.log").read_text()


def test_kill_9_in_a_disordered_replay_still_gives_the_golden_trigger_ids(stack, unique_prefix) -> None:
    """Lines arriving up to the reorder window late, the worker killed midway: the
    events it held in its buffer come back with its state, and the ids are the golden ones."""
    with scratch_database(stack) as db:
        settings = isolated(db, unique_prefix)
        result, _, _ = kill_9_midway(settings, lambda: db_worker(settings), disorder_s=5.0)
        assert_golden_triggers(result.observed.triggers, crashed=True)
        assert_one_row_per_trigger(settings)


def test_kill_9_of_a_rocksdb_worker_then_restart_on_its_data_directory(stack, unique_prefix, tmp_path) -> None:
    """The killed worker's table files may hold writes the changelog never got:
    the restarted worker drops them and rebuilds its tables from the changelogs."""
    datadir = tmp_path / "worker"
    with scratch_database(stack) as db:
        settings = isolated(db, unique_prefix)
        result, _, second = kill_9_midway(
            settings, lambda: db_worker(settings, "--set", "worker_store=rocksdb://", datadir=datadir)
        )
        assert_golden_triggers(result.observed.triggers, crashed=True)
        assert_one_row_per_trigger(settings)
    assert "did not stop cleanly; dropped its RocksDB table files" in (datadir / "worker.log").read_text()
    assert (datadir / "v1" / "clean-stop").exists()  # the second one stopped cleanly


def test_two_workers_in_one_group_together_give_the_single_worker_output(stack, unique_prefix) -> None:
    settings = isolated(stack, unique_prefix)
    lines = read_lines(SAMPLE_CLASSROOM.read_bytes())

    async def scenario() -> ReplayResult:
        workers = [start_worker(settings), start_worker(settings)]
        try:
            await asyncio.sleep(3)  # let both join before the data arrives
            await produce_lines(settings, lines, rate=400)
            return await finish(settings, lines)
        finally:
            for w in workers:
                w.stop()

    result = on_own_topics(settings, scenario)
    golden = golden_for(SAMPLE_CLASSROOM)
    runs = {(r.session_id, r.run_index): r.edit_distance for r in result.observed.runs}
    expected = {(s["session_id"], r["index"]): r["edit_distance"] for s in golden["sessions"] for r in s["runs"]}
    assert {k: v for k, v in runs.items() if expected.get(k) != v} == {}, "runs differ from golden"
    assert set(expected) <= set(runs)
    assert_golden_triggers(result.observed.triggers, crashed=True)  # a rebalance may re-publish


def test_rocksdb_store_gives_the_same_triggers(stack, unique_prefix) -> None:
    settings = isolated(stack, unique_prefix)
    lines = read_lines(SAMPLE_CLASSROOM.read_bytes())

    async def scenario() -> ReplayResult:
        worker = start_worker(settings, "replay", "--set", "worker_store=rocksdb://")
        try:
            await produce_lines(settings, lines)
            return await finish(settings, lines)
        finally:
            worker.stop()

    result = on_own_topics(settings, scenario)
    assert_golden_triggers(result.observed.triggers, crashed=False)


def persisted_offsets(datadir: Path, table: str) -> dict[int, int]:
    """The changelog offset each RocksDB partition file of ``table`` says it holds."""
    from rocksdict import AccessType, Rdict

    out: dict[int, int] = {}
    for path in datadir.rglob(f"{table}-*.db"):
        db = Rdict(str(path), access_type=AccessType.read_only())
        try:
            raw = db.get(b"__faust\0offset__")
        finally:
            db.close()
        if raw is not None:
            out[int(path.name.removesuffix(".db").rsplit("-", 1)[1])] = int(raw)
    return out


def test_rocksdb_store_resumes_from_its_persisted_changelog_offsets(stack, unique_prefix, tmp_path) -> None:
    """The agent writes table changes itself; a RocksDB store must still learn the
    changelog offset of each acknowledged write, so a restart resumes there."""
    settings = isolated(stack, unique_prefix)
    lines = read_lines(SAMPLE_CLASSROOM.read_bytes())
    half = len(lines) // 2
    datadir = tmp_path / "worker"

    def worker() -> WorkerProcess:
        return start_worker(settings, "replay", "--set", "worker_store=rocksdb://", datadir=datadir)

    async def scenario() -> tuple[ReplayResult, dict[int, int], dict[int, int]]:
        first = worker()
        try:
            await produce_lines(settings, lines[:half])
            await wait_analysed(settings, 180)
        finally:
            assert first.stop() == 0, first.log_tail()
        held = persisted_offsets(datadir, "students")
        ends = await end_offsets(settings, f"{settings.app_id}-students-changelog")
        second = worker()
        try:
            await produce_lines(settings, lines[half:])
            return await finish(settings, lines), held, ends
        finally:
            second.stop()

    result, held, ends = on_own_topics(settings, scenario)
    written = {partition: end - 1 for partition, end in ends.items() if end > 0}
    assert written and held == written  # every partition file holds its last changelog record
    assert_golden_triggers(result.observed.triggers, crashed=False)  # a clean stop re-publishes nothing
