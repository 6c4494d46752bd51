"""The pure engine, driven in-process, reproduces every golden file exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.config import EngineConfig
from streams.local import analyze_lines, read_lines
from streams.scoring import TreeEditScorer
from streams.summary import build_summary
from tests.datafiles import all_logs, golden_for
from tests.golden_compare import assert_same_as_golden

COMPARED = ("runs", "unscored_runs", "triggers", "inactive", "episodes", "pauses", "trigger_counts")


@pytest.fixture(scope="module", params=all_logs(), ids=lambda p: p.stem)
def replayed(request: pytest.FixtureRequest) -> tuple[dict, dict]:
    log: Path = request.param
    run = analyze_lines(read_lines(log.read_bytes()), EngineConfig(), TreeEditScorer())
    summary = build_summary(run.observed, input_name=log.name, input_sha256=run.sha256, input_report=run.report)
    return summary, golden_for(log)


def test_file_level_figures(replayed: tuple[dict, dict]) -> None:
    summary, golden = replayed
    for key in (
        "input_sha256",
        "input_report",
        "horizon_ts",
        "n_students",
        "n_sessions",
        "n_unscored_runs",
        "trigger_counts",
    ):
        assert summary[key] == golden[key], key


def test_sessions_match_exactly(replayed: tuple[dict, dict]) -> None:
    summary, golden = replayed
    assert [(s["student_id"], s["session_id"]) for s in summary["sessions"]] == [
        (s["student_id"], s["session_id"]) for s in golden["sessions"]
    ]
    for ours, theirs in zip(summary["sessions"], golden["sessions"], strict=True):
        for key in COMPARED:
            assert ours[key] == theirs[key], (ours["session_id"], key)
        for key in ("n_events", "event_types", "first_ts", "last_ts", "playgrounds"):
            assert ours[key] == theirs[key], (ours["session_id"], key)


def test_every_key_of_the_golden_file(replayed: tuple[dict, dict]) -> None:
    """The whole file: semantics, boundary cases and the student view included."""
    summary, golden = replayed
    assert_same_as_golden(summary, golden)
