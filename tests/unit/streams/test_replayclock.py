"""The replay clock: a partition's watermark is its latest event time; its students
follow it only while its input is in time order (an event more than
``DISORDER_S`` behind switches the partition to per-student time for good)."""

from __future__ import annotations

import pytest

from streams.replayclock import DISORDER_S, ReplayClock, Step

# (events as (partition, ts), the step of each event as (mark, raised, follow, disordered))
CASES: dict[str, tuple[list[tuple[int, float]], list[tuple[float, bool, bool, bool]]]] = {
    "the first event sets the mark without raising it": (
        [(0, 100.0)],
        [(100.0, False, True, False)],
    ),
    "time order: each later event raises the mark": (
        [(0, 100.0), (0, 160.0), (0, 160.0), (0, 200.0)],
        [
            (100.0, False, True, False),
            (160.0, True, True, False),
            (160.0, False, True, False),
            (200.0, True, True, False),
        ],
    ),
    "an event up to DISORDER_S behind is still in order": (
        [(0, 1000.0), (0, 1000.0 - DISORDER_S)],
        [(1000.0, False, True, False), (1000.0, False, True, False)],
    ),
    "an event more than DISORDER_S behind switches the partition": (
        [(0, 1000.0), (0, 1000.0 - DISORDER_S - 1)],
        [(1000.0, False, True, False), (1000.0, False, False, True)],
    ),
    "a switched partition never follows again, while its mark still rises": (
        [(0, 1000.0), (0, 900.0), (0, 1200.0), (0, 1300.0)],
        [
            (1000.0, False, True, False),
            (1000.0, False, False, True),
            (1200.0, True, False, False),
            (1300.0, True, False, False),
        ],
    ),
    "partitions are independent": (
        [(0, 1000.0), (1, 500.0), (0, 800.0), (1, 510.0)],
        [
            (1000.0, False, True, False),
            (500.0, False, True, False),
            (1000.0, False, False, True),
            (510.0, True, True, False),
        ],
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_steps(name: str) -> None:
    events, expected = CASES[name]
    clock = ReplayClock()
    steps = [clock.observe(partition, ts) for partition, ts in events]
    assert steps == [Step(*row) for row in expected]


@pytest.mark.parametrize(
    ("stored", "ts", "step"),
    [
        (500.0, 450.0, Step(500.0, False, True, False)),  # behind a stored mark, within the window
        (500.0, 430.0, Step(500.0, False, False, True)),  # far behind: 70 s > DISORDER_S
        (500.0, 430.0 + 10.0, Step(500.0, False, True, False)),
        (500.0, 600.0, Step(600.0, True, True, False)),  # a stored mark is raised like any other
    ],
)
def test_a_started_partition_continues_from_its_stored_mark(stored: float, ts: float, step: Step) -> None:
    clock = ReplayClock()
    clock.start(3, stored)
    assert clock.knows(3) and not clock.knows(4)
    assert clock.observe(3, ts) == step


def test_reset_forgets_marks_and_disorder() -> None:
    clock = ReplayClock()
    clock.observe(0, 1000.0)
    assert clock.observe(0, 1.0).disordered and clock.is_disordered(0)
    clock.reset()
    assert not clock.knows(0) and clock.mark(0) is None and not clock.is_disordered(0)
    assert clock.observe(0, 1.0) == Step(1.0, False, True, False)


def test_the_disorder_window_is_a_parameter() -> None:
    clock = ReplayClock(disorder_s=5.0)
    clock.observe(0, 100.0)
    assert clock.observe(0, 94.0).disordered


def test_deterministic_for_the_same_input() -> None:
    events = [(p % 3, float(ts)) for p, ts in zip(range(50), [10, 70, 5, 300, 200, 250] * 9, strict=False)]
    runs = []
    for _ in range(2):
        clock = ReplayClock()
        runs.append([clock.observe(p, ts) for p, ts in events])
    assert runs[0] == runs[1]


@pytest.mark.parametrize("partitions", [1, 8])
def test_the_in_process_replay_following_the_clock_reproduces_the_golden_file(partitions: int) -> None:
    """The rule the broker replay follows (a watermark per partition), in process:
    every golden figure of the sample classroom holds, trailing alerts included."""
    from streams.config import EngineConfig
    from streams.local import analyze_lines, read_lines
    from streams.scoring import TreeEditScorer
    from streams.summary import build_summary
    from tests.datafiles import SAMPLE_CLASSROOM, golden_for
    from tests.golden_compare import assert_same_as_golden

    run = analyze_lines(
        read_lines(SAMPLE_CLASSROOM.read_bytes()), EngineConfig(), TreeEditScorer(), partitions=partitions
    )
    summary = build_summary(
        run.observed, input_name=SAMPLE_CLASSROOM.name, input_sha256=run.sha256, input_report=run.report
    )
    assert_same_as_golden(summary, golden_for(SAMPLE_CLASSROOM))
