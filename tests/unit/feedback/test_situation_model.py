"""The situation model text."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from feedback.policy import contains_banned_word
from feedback.situation import build_situation
from topology.schemas.feedback import (
    ActionLevel,
    Cognition,
    Direction,
    Persistence,
    SessionMetrics,
)


def m(**kw: Any) -> SessionMetrics:
    base: dict[str, Any] = dict(
        playground="GO-Mars",
        segment_events=12,
        time_on_task_s=360.0,
        action_level=ActionLevel.MEDIUM,
    )
    base.update(kw)
    return SessionMetrics(**base)


def test_full_go_mars_model() -> None:
    text = build_situation(
        m(
            progress_pct=40.0,
            direction=Direction.INCREASING,
            persistence=Persistence.HIGH_PERSISTER,
            cognition=Cognition.SNAP_N_TEST,
            milestones_done=["sample_out_of_crater", "solar_panel"],
            milestones_todo=["sample_to_lab", "rover", "rocket_upright", "fuel_cells"],
            run_count=2,
            post_run_pause_count=2,
            inactive_pause_count=1,
            last_error="The `sample_drive` block never runs.",
        )
    )
    assert text == (
        "Progress on the task: 40% and going up.\n"
        "Jobs already done: get a rock sample out of the crater, tilt the solar panel.\n"
        "Jobs not done yet: deliver a rock sample to the lab, rescue the rover, "
        "stand the rocket ship upright, take the fuel cells out of their cradles.\n"
        "Time on this playground: about 6 min, with 2 runs of the program so far.\n"
        "Work pattern: the student is adding one block at a time and testing after each.\n"
        "Persistence: the student keeps at it even though progress is still low.\n"
        "After a run, the student stopped to watch the result 2 times.\n"
        "The student took one long break of five minutes or more.\n"
        "Most recent error the robot reported: The `sample_drive` block never runs."
    )


def test_other_playground_keeps_the_lines_without_progress() -> None:
    text = build_situation(
        m(
            playground="RoverRescue",
            time_on_task_s=30,
            run_count=1,
            post_run_pause_count=1,
            last_error="bumped into the wall",
        )
    )
    assert text == (
        "Time on this playground: less than a minute, with 1 run of the program so far.\n"
        "After a run, the student stopped to watch the result once.\n"
        "Most recent error the robot reported: bumped into the wall"
    )
    assert text != "None"


@pytest.mark.parametrize(
    ("kw", "absent"),
    [
        (dict(cognition=Cognition.UNCLASSIFIED, progress_pct=0.0, direction=Direction.STATIC), "Work pattern"),
        (dict(persistence=Persistence.IN_PROGRESS, progress_pct=0.0, direction=Direction.STATIC), "Persistence"),
        (dict(progress_pct=0.0, direction=Direction.STATIC), "Jobs"),
        (dict(), "Progress"),
        (dict(post_run_pause_count=0), "watch the result"),
        (dict(last_error=None), "error"),
    ],
)
def test_lines_are_omitted(kw: dict[str, Any], absent: str) -> None:
    assert absent not in build_situation(m(**kw))


@pytest.mark.parametrize(
    ("direction", "phrase"),
    [(Direction.INCREASING, "going up"), (Direction.DECREASING, "going down"), (Direction.STATIC, "holding steady")],
)
def test_direction_phrases(direction: Direction, phrase: str) -> None:
    text = build_situation(m(progress_pct=33.3, direction=direction))
    assert text.startswith(f"Progress on the task: 33% and {phrase}.")


def test_run_count_wording() -> None:
    assert "with no runs of the program yet." in build_situation(m(run_count=0))
    assert "with 3 runs of the program so far." in build_situation(m(run_count=3))


def test_nothing_measured_is_empty() -> None:
    assert build_situation(None) == ""
    assert build_situation(m(segment_events=0, run_count=0, time_on_task_s=0)) == ""


def test_no_enum_names_and_no_label_words_in_any_combination() -> None:
    internal = [v.value for enum in (Cognition, Persistence, Direction, ActionLevel) for v in enum]
    for cog, per, trend in itertools.product(Cognition, Persistence, Direction):
        text = build_situation(
            m(
                progress_pct=50.0,
                direction=trend,
                cognition=cog,
                persistence=per,
                milestones_done=["rover"],
                milestones_todo=["fuel_cells"],
                run_count=4,
                post_run_pause_count=1,
                inactive_pause_count=2,
            )
        )
        assert contains_banned_word(text) is None, text
        assert not any(name in text for name in internal if len(name) > 6), text
        assert "runProject" not in text
