"""Playground catalogs: canonical names, task/blocks fallback, milestones, block names."""

from __future__ import annotations

import pytest

from feedback import catalogs
from feedback.catalogs import (
    available_blocks,
    block_name,
    canonical_playground,
    progress_spec,
    task_description,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("GOMars", "GO-Mars"),
        ("GO-Mars", "GO-Mars"),
        ("go_mars", "GO-Mars"),
        ("  gomars ", "GO-Mars"),
        ("GO Mars", "GO-Mars"),
        ("RoverRescue", "RoverRescue"),
        ("  CoralReefRescue  ", "CoralReefRescue"),
        ("", None),
        ("   ", None),
        (None, None),
    ],
)
def test_canonical_playground(raw: str | None, expected: str | None) -> None:
    assert canonical_playground(raw) == expected


def test_go_mars_task_and_blocks_for_every_spelling() -> None:
    task = task_description("GO-Mars")
    blocks = available_blocks("GO-Mars")
    assert "GO-Mars" in task and "5 points" in task
    assert 60 <= len(blocks) <= 80
    for spelling in ("GOMars", "go_mars"):
        assert task_description(spelling) == task
        assert available_blocks(spelling) == blocks


@pytest.mark.parametrize("playground", ["RoverRescue", "CastleCrasherPlus", "WallMaze", None, ""])
def test_other_playgrounds_get_the_default_never_go_mars(playground: str | None) -> None:
    assert task_description(playground) == task_description("default")
    assert "Mars" not in task_description(playground)
    assert available_blocks(playground) == ()
    assert progress_spec(playground) is None


def test_go_mars_milestones() -> None:
    spec = progress_spec("GOMars")
    assert spec is not None
    assert [m.key for m in spec.milestones] == [
        "sample_out_of_crater",
        "sample_to_lab",
        "solar_panel",
        "rover",
        "rocket_upright",
        "fuel_cells",
    ]
    assert spec.score_param == "total_score" and spec.score_cap == 5
    assert all(m.label and m.label[0].islower() for m in spec.milestones)
    assert spec.label("rover") == "rescue the rover"
    assert spec.label("nope") == "nope"


@pytest.mark.parametrize(
    ("params", "done"),
    [
        ({}, []),
        ({"removed_samples_crater": 1}, ["sample_out_of_crater"]),
        ({"removed_samples_crater": 0}, []),
        ({"samples_moved_lab_top": 2}, ["sample_to_lab"]),
        ({"samples_moved_lab": "1"}, []),  # strings never count
        ({"tilted_solarPanel": True, "rover_rescued": False}, ["solar_panel"]),
        ({"tilted_solarPanel": 1}, []),  # flags must be exactly true
        ({"lifted_rocketShip_upright": True, "removed_fuel_cells_craters": 3}, ["rocket_upright", "fuel_cells"]),
        ({"cleared_debris_landingSite": True}, []),  # not one of the six
    ],
)
def test_milestone_predicates(params: dict[str, object], done: list[str]) -> None:
    spec = progress_spec("GO-Mars")
    assert spec is not None
    assert [m.key for m in spec.milestones if m.is_done(params)] == done


@pytest.mark.parametrize(
    ("block_type", "name"),
    [
        ("pg_drivetrain_drive_for", "drive for"),
        ("pg_drivetrain_turn_for", "turn for"),
        ("pg_events_when_started", "when started"),
        ("pg_control_repeat_until", "repeat until"),
        ("pg_sensing_drive_is_done", "drive is done"),
        ("iq_motion_spin_for", "spin motor for"),
        ("pg_drivetrain_turn_to_heading", "turn to heading"),
        ("something_unknown", "something_unknown"),
    ],
)
def test_block_name(block_type: str, name: str) -> None:
    assert block_name(block_type) == name


def test_every_fixture_block_type_has_a_friendly_name() -> None:
    seen = [
        "pg_drivetrain_drive_for",
        "pg_drivetrain_turn_for",
        "pg_events_when_started",
        "pg_control_wait",
        "pg_drivetrain_turn_to_heading",
        "pg_control_repeat",
        "pg_control_repeat_until",
        "pg_sensing_drive_is_done",
        "pg_drivetrain_stop_driving",
        "pg_sensing_drive_is_moving",
        "pg_drivetrain_set_drive_velocity",
        "pg_drivetrain_drive",
        "pg_control_if_then",
        "iq_motion_spin_for",
        "when_started",
        "drive_for",
        "turn_for",
        "arm_spin",
        "wait",
    ]
    assert [t for t in seen if t not in catalogs._block_names()] == []


def test_known_playgrounds_and_default_present() -> None:
    assert catalogs.known_playgrounds() == ("GO-Mars",)
    assert catalogs.entry_for(None).playground == catalogs.DEFAULT_PLAYGROUND
