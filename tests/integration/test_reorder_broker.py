"""Late and reordered telemetry through the real broker (fixtures README §2): a
worker with REORDER_WINDOW_S=5 given lines delayed up to 5 s (seeded, with and
without resends) reproduces the event-order goldens exactly; lines delayed far
beyond the window are counted late and flagged, and nothing is lost."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from streams.local import read_lines
from streams.summary import build_summary
from tests.datafiles import SAMPLE_CLASSROOM, golden_for, reference_logs
from tests.integration.pipeline import isolated, run
from vexnudge.disorder import arrival_order
from vexnudge.replay import ReplayResult, delete_topics, replay
from vexnudge.workerproc import WorkerProcess

pytestmark = pytest.mark.integration

WINDOW = "5"


def replay_disordered(stack, prefix: str, log: Path, within_s: float, seed: int, resend: float) -> ReplayResult:  # type: ignore[no-untyped-def]
    settings = isolated(stack, prefix)
    arrived = arrival_order(read_lines(log.read_bytes()), within_s, seed, resend)
    worker = WorkerProcess(
        settings.app_id,
        settings.topic_prefix,
        clock="replay",
        extra_args=["--commit-interval", "0.2"],
        env={"REORDER_WINDOW_S": WINDOW},
    ).start()
    try:
        return run(
            replay(
                settings, [line for _, line in arrived], timeout_s=240, worker=worker, numbers=[n for n, _ in arrived]
            )
        )
    finally:
        run(delete_topics(settings))


def sessions_of(result: ReplayResult, log: Path) -> list[dict]:
    data = log.read_bytes()
    summary = build_summary(
        result.observed,
        input_name=log.name,
        input_sha256=hashlib.sha256(data).hexdigest(),
        input_report=result.input_report(len(read_lines(data))),
    )
    return summary["sessions"]


@pytest.mark.parametrize(
    ("log", "seed", "resend"),
    [
        (SAMPLE_CLASSROOM, 1, 0.0),
        (SAMPLE_CLASSROOM, 2, 0.05),
        *((log, 3, 0.05 * (i % 2)) for i, log in enumerate(reference_logs())),
    ],
    ids=lambda v: v.stem if isinstance(v, Path) else str(v),
)
def test_delays_within_the_window_give_the_golden_through_the_broker(stack, unique_prefix, log, seed, resend) -> None:
    result = replay_disordered(stack, unique_prefix, log, 5.0, seed, resend)
    assert sessions_of(result, log) == golden_for(log)["sessions"]
    assert not [r for r in result.observed.runs if r.late]


def test_delays_beyond_the_window_are_late_counted_and_never_lost(stack, unique_prefix) -> None:
    result = replay_disordered(stack, unique_prefix, SAMPLE_CLASSROOM, 90.0, 5, 0.0)
    lines = read_lines(SAMPLE_CLASSROOM.read_bytes())
    assert len(result.observed.events) == len(lines)  # every event accepted and analysed
    assert [r for r in result.observed.runs if r.late], "some runs arrived far beyond the window"
    golden = golden_for(SAMPLE_CLASSROOM)
    assert sum(len(s["runs"]) + len(s["unscored_runs"]) for s in sessions_of(result, SAMPLE_CLASSROOM)) == sum(
        len(s["runs"]) + len(s["unscored_runs"]) for s in golden["sessions"]
    )
