"""Momentary trigger rules, table-driven (one stretch at a time)."""

from __future__ import annotations

import pytest

from streams.config import EngineConfig
from streams.runs import StretchCounters, score_run

CONFIG = EngineConfig()


def fires(distances: list[int | None], playground: str | None = "GOMars") -> list[tuple[str, int]]:
    counters = StretchCounters()
    out: list[tuple[str, int]] = []
    for index, d in enumerate(distances):
        out += [(f.type.value, index) for f in score_run(counters, d, playground, CONFIG)]
    return out


@pytest.mark.parametrize(
    ("distances", "expected"),
    [
        # the worked sequence: wheel_spin, resilience, iterative, explorer
        (
            [None, 0, 0, 0, 0, 0, 0, 0, 2, 1, 1, 1, 1, 1, 14],
            [("wheel_spin", 6), ("resilience", 8), ("iterative", 13), ("explorer", 14)],
        ),
        ([None, 0, 0, 0, 0, 0], []),  # 5 zeros: nothing
        ([None, 0, 0, 0, 0, 0, 0], [("wheel_spin", 6)]),  # 6th zero fires
        ([None, 0, 0, 0, 0, 0, 0, 0, 0], [("wheel_spin", 6)]),  # fires once per streak
        (
            [None] + [0] * 6 + [1] + [0] * 6,  # re-armed by a change
            [("wheel_spin", 6), ("resilience", 7), ("wheel_spin", 13)],
        ),
        ([None, 0, 0, 0, 5], []),  # 3 zeros: no resilience
        ([None, 0, 0, 0, 0, 5], [("resilience", 5)]),  # 4 zeros then a change
        ([None, 13, 12, 20], [("explorer", 1), ("explorer", 3)]),  # every big change
        ([None] + [1] * 6, [("iterative", 6)]),  # distance 1 counts
        ([None] + [1] * 8, [("iterative", 6)]),  # disarmed until a zero
        ([None] + [1] * 6 + [0] + [1] * 6, [("iterative", 6), ("iterative", 13)]),
        ([None] + [1] * 5 + [None, 1], [("iterative", 7)]),  # not comparable: no change
    ],
)
def test_momentary_rules(distances: list[int | None], expected: list[tuple[str, int]]) -> None:
    assert fires(distances) == expected


def test_several_fires_on_one_run_keep_the_normative_order() -> None:
    # 6 zeros (wheel_spin), then one step of 20 = resilience + explorer on the same run
    seq = [None] + [0] * 6 + [20]
    assert fires(seq) == [("wheel_spin", 6), ("resilience", 7), ("explorer", 7)]
    # and iterative joins when the count reaches the threshold on that run
    seq = [None, 1, 1, 0, 0, 0, 0, 20, 1, 1]
    assert fires(seq, "RoverRescue") == [("resilience", 7), ("explorer", 7), ("iterative", 9)]


@pytest.mark.parametrize(
    ("playground", "threshold"),
    [
        ("RoverRescue", 3),
        ("CoralReefRescue", 5),
        ("CastleCrasherPlus", 6),
        ("GOMars", 6),
        ("WallMaze", 6),
        (None, 6),
    ],
)
def test_iterative_threshold_per_playground(playground: str | None, threshold: int) -> None:
    got = fires([None] + [2] * 10, playground)
    assert got == [("iterative", threshold)]


def test_details_and_evidence_counters() -> None:
    counters = StretchCounters()
    details = []
    for d in [None, 0, 0, 0, 0, 0, 0, 0, 3]:
        details += [(f.detail, f.zero_streak) for f in score_run(counters, d, None, CONFIG)]
    assert details == [("6 identical reruns", 6), ("recovered after 7 reruns", 7)]
    assert counters.recent == [None, 0, 0, 0, 0, 0, 0, 0, 3]
    for d in [1] * 5:
        score_run(counters, d, None, CONFIG)
    assert counters.recent == [0, 0, 0, 0, 0, 3, 1, 1, 1, 1, 1][-10:]


def test_counters_round_trip_json() -> None:
    counters = StretchCounters(3, False, 2, True, [None, 1])
    assert StretchCounters.from_json(counters.to_json()) == counters
