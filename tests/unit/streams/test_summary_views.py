"""The parts of the golden-format summary the golden files do not isolate: the
student view across sessions, boundary cases of every kind, and semantics
that follow the settings."""

from __future__ import annotations

from streams.config import EngineConfig
from streams.local import LocalAnalyzer
from streams.summary import Observed, build_summary
from tests.unit.streams.test_engine import FakeScorer, ev
from topology.schemas import NormalizedEvent
from tree_edit.distance import COSTS


def _observed(events: list[NormalizedEvent], config: EngineConfig | None = None) -> Observed:
    """What the pipeline publishes for these events (per session), as a replay observes it."""
    analyzer, obs = LocalAnalyzer(config or EngineConfig(), FakeScorer()), Observed()  # type: ignore[arg-type]
    for event in events:
        obs.add(event)
        for output in analyzer.on_event(event):
            obs.add(output)
    for output in analyzer.finish(max(e.ts for e in events)):
        obs.add(output)
    return obs


def _summary(events: list[NormalizedEvent], config: EngineConfig | None = None) -> dict:
    return build_summary(
        _observed(events, config),
        input_name="t.ndjson",
        input_sha256="0" * 64,
        input_report={},
        config=config,
        scorer=FakeScorer(),
    )


def _other_student(event: NormalizedEvent) -> NormalizedEvent:
    return event.model_copy(update={"student_key": "koala", "student_id": "Koala"})


def test_the_student_view_compares_a_new_sessions_first_run_with_the_last_one_before() -> None:
    events = [
        ev(0, "runProject", session="s1", xml="a:0"),
        ev(20, "runProject", session="s1", xml="b:3"),
        ev(40, "runProject", session="s2", xml="c:5"),
    ]
    summary = _summary(events)
    per_session = {s["session_id"]: [r["edit_distance"] for r in s["runs"]] for s in summary["sessions"]}
    assert per_session == {"s1": [None, 3], "s2": [None]}  # each session starts a stretch
    (student,) = summary["students"]
    assert (student["student_key"], student["sessions"], student["n_events"]) == ("otter", ["s1", "s2"], 3)
    assert [(r["index"], r["edit_distance"]) for r in student["runs"]] == [(0, None), (1, 3), (2, 5)]


def test_boundary_cases_of_every_kind() -> None:
    otter = [ev(0), ev(5), ev(305), ev(1145), ev(1386, session="s2")]
    horizon = _other_student(ev(1386 + 240))  # the file ends where otter's trailing alert falls
    rows = _summary([*otter, horizon])["boundary_cases"]
    assert [
        (r["student_id"], r["session_id"], r["after_ts"] - otter[0].ts, r["gap"], r["boundary"], r["value"])
        for r in rows
    ] == [
        ("Otter", "s1", 0, 5, "short_pause", 5),  # at SHORT_PAUSE_MIN_S
        ("Otter", "s1", 5, 300, "inactive_pause", 300),  # at PAUSE_THRESHOLD_S
        ("Otter", "s1", 305, 840, "inactive_fire_1", 840),  # at the second alert
        ("Otter", "s2", 1386, 240, "inactive_trailing_0", 240),  # the horizon at a trailing alert
    ]  # the 241 s gap between the sessions is not within a second of 240


def test_semantics_state_the_constants_in_force() -> None:
    config = EngineConfig(
        inactive_after_s=300.0,
        inactive_realert_s=900.5,
        explorer_edit_distance=10,
        iterative_thresholds={"WallMaze": 4},
        pause_threshold_s=400.0,
    )
    summary = _summary([ev(0), ev(300)], config)
    constants = summary["semantics"]["constants"]
    assert (constants["INACTIVE_TRIGGER_SECONDS"], constants["RE_ALERT_SECONDS"]) == (300, 900.5)
    assert (constants["EXPLORER_EDIT_DISTANCE"], constants["ITERATIVE_THRESHOLDS"]) == (10, {"WallMaze": 4})
    assert constants["PAUSE_THRESHOLD_S"] == 400.0
    assert "t0+300+900.5*k" in summary["semantics"]["inactive_rule"]
    assert summary["semantics"]["edit_costs"] == COSTS
    assert [r["boundary"] for r in summary["boundary_cases"]] == ["inactive_fire_0"]  # 300 s is the alert time now


def test_an_empty_replay_has_every_key() -> None:
    summary = build_summary(Observed(), input_name="empty.ndjson", input_sha256="0" * 64, input_report={})
    assert (summary["sessions"], summary["students"], summary["boundary_cases"]) == ([], [], [])
    assert summary["semantics"]["version"] == "v2"
