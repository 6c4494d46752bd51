"""Every run of every golden file: distances, workspace status and tree sizes.

The run sequence of each stream is rebuilt from the raw log and diffed with
the production calculator; the ``apted`` reference must agree on every pair.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.datafiles import all_logs, golden_for
from tests.unit.tree_edit.fixture_runs import Event, accepted_events, runs, streams
from tree_edit import DistanceCalculator, Program, Unusable, extract_program, run_steps
from tree_edit.reference import reference_distance

LOGS = all_logs()


def _scored(stream: list[Event], calc: DistanceCalculator) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(scored runs, unscored runs) of one stream, in the goldens' vocabulary."""
    outcomes: list[tuple[str | None, Program | Unusable]] = []
    unscored: list[dict[str, Any]] = []
    events = list(runs(stream))
    previous: Program | None = None
    scored_events: list[Event] = []
    for event in events:
        outcome = extract_program(event.payload.get("project"), previous)
        if isinstance(outcome, Unusable):
            after = len(scored_events) - 1 if scored_events else None
            unscored.append({"event_id": event.envelope_id, "reason": outcome.reason.value, "after_run_index": after})
        else:
            previous = outcome
            scored_events.append(event)
        outcomes.append((event.payload.get("playground"), outcome))
    scored = []
    for step, event in zip(run_steps(outcomes), scored_events, strict=True):
        tree = step.program.tree
        distance = None
        if step.previous is not None:
            distance = calc.between_programs(step.previous, step.program)
            assert reference_distance(step.previous.tree, tree) == distance, event.envelope_id
        scored.append(
            {
                "index": step.index,
                "event_id": event.envelope_id,
                "playground": step.playground,
                "edit_distance": distance,
                "workspace_status": step.program.status.value,
                "n_blocks": tree.n_blocks,
                "n_stacks": tree.n_stacks,
                "label_tree_size": tree.label_tree_size,
            }
        )
    return scored, unscored


RUN_KEYS = (
    "index",
    "event_id",
    "playground",
    "edit_distance",
    "workspace_status",
    "n_blocks",
    "n_stacks",
    "label_tree_size",
)


@pytest.mark.parametrize("log", LOGS, ids=[log.stem for log in LOGS])
def test_session_runs_match_golden(log: Path) -> None:
    expected = golden_for(log)
    found = streams(accepted_events(log))
    calc = DistanceCalculator(cache_size=64, max_blocks=2000)
    assert len(found) == len(expected["sessions"])
    for session in expected["sessions"]:
        key = (session["student_id"].strip().lower(), session["session_id"])
        scored, unscored = _scored(found[key], calc)
        want = [{k: run[k] for k in RUN_KEYS} for run in session["runs"]]
        assert scored == want, key
        want_unscored = [{k: u[k] for k in ("event_id", "reason", "after_run_index")} for u in session["unscored_runs"]]
        assert unscored == want_unscored, key


@pytest.mark.parametrize("log", LOGS, ids=[log.stem for log in LOGS])
def test_student_runs_match_golden(log: Path) -> None:
    """The student view diffs across sessions of the same student."""
    expected = golden_for(log)
    found = streams(accepted_events(log), per_student=True)
    calc = DistanceCalculator(cache_size=0, max_blocks=2000)
    for student in expected["students"]:
        scored, unscored = _scored(found[(student["student_key"],)], calc)
        keys = ("index", "event_id", "playground", "edit_distance")
        want = [{k: r[k] for k in keys} for r in student["runs"]]
        assert [{k: r[k] for k in keys} for r in scored] == want, student["student_key"]
        assert [(u["event_id"], u["reason"]) for u in unscored] == [
            (u["event_id"], u["reason"]) for u in student["unscored_runs"]
        ]


def test_goldens_cover_every_file() -> None:
    assert len(LOGS) == 29
    assert all(log.exists() for log in LOGS)
