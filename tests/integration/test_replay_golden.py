"""Golden files through the real broker: every fixture replayed by a worker in
event-time mode; per session the distances, momentary fires, inactive alerts,
unscored runs, episodes and pauses equal the golden answer exactly, and so does
the whole golden-format summary (boundary cases and the student view included)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from streams.config import EngineConfig
from streams.local import read_lines
from streams.summary import build_summary
from tests.datafiles import all_logs, golden_for
from tests.golden_compare import assert_same_as_golden
from tests.integration.pipeline import isolated, run
from vexnudge.replay import delete_topics, replay

pytestmark = pytest.mark.integration

COMPARED = (
    "runs",
    "unscored_runs",
    "triggers",
    "inactive",
    "episodes",
    "pauses",
    "trigger_counts",
    "n_events",
    "event_types",
)


@pytest.mark.parametrize("log", all_logs(), ids=lambda p: p.stem)
def test_broker_replay_matches_golden(stack, unique_prefix, log: Path) -> None:
    settings = isolated(stack, unique_prefix)
    data = log.read_bytes()
    lines = read_lines(data)
    try:
        result = run(replay(settings, lines, timeout_s=180))
    finally:
        run(delete_topics(settings))
    summary = build_summary(
        result.observed,
        input_name=log.name,
        input_sha256=hashlib.sha256(data).hexdigest(),
        input_report=result.input_report(len(lines)),
        config=EngineConfig.from_settings(settings),
    )
    golden = golden_for(log)
    for key in ("input_report", "horizon_ts", "n_sessions", "n_unscored_runs", "trigger_counts"):
        assert summary[key] == golden[key], key
    assert [s["session_id"] for s in summary["sessions"]] == [s["session_id"] for s in golden["sessions"]]
    for ours, theirs in zip(summary["sessions"], golden["sessions"], strict=True):
        for key in COMPARED:
            assert ours[key] == theirs[key], (ours["session_id"], key)
    assert_same_as_golden(summary, golden)  # the whole file, as `vexnudge replay --golden-format` writes it
    # every trigger id is unique: fire-once ids never collide
    ids = [t.trigger_id for t in result.observed.triggers]
    assert len(ids) == len(set(ids))
