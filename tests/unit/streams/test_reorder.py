"""Arrival order is not event order (fixtures README §2): with a reorder window,
lines delayed up to the window give exactly the event-order goldens; later ones
are taken late, flagged, and never crash or vanish."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from streams.config import EngineConfig
from streams.ingest import NormalizedEvent, decode_line
from streams.local import analyze_lines, read_lines
from streams.reorder import Reorderer
from streams.scoring import TreeEditScorer
from streams.summary import build_summary
from tests.datafiles import all_logs, golden_for

WINDOW = 5.0


def delayed(lines: list[bytes], max_delay: float, seed: int, resend: float = 0.0) -> tuple[list[bytes], list[int]]:
    """The lines in a seeded arrival order: each arrives at its event time plus a
    delay in [0, max_delay]; ``resend`` of them arrive a second time, later."""
    rng = random.Random(seed)
    arrivals: list[tuple[float, int, int]] = []
    last = -math.inf
    for index, line in enumerate(lines):
        out = decode_line(line)
        ts = out.ts if isinstance(out, NormalizedEvent) else last
        last = ts
        arrivals.append((ts + rng.uniform(0, max_delay), index, index))
        if rng.random() < resend:
            arrivals.append((ts + rng.uniform(0, max_delay), len(lines) + index, index))
    arrivals.sort()
    return [lines[i] for _, _, i in arrivals], [i + 1 for _, _, i in arrivals]


def sessions(lines: list[bytes], numbers: list[int] | None, window: float, partitions: int | None = None) -> list[dict]:
    run = analyze_lines(
        lines, EngineConfig(reorder_window_s=window), TreeEditScorer(), numbers=numbers, partitions=partitions
    )
    return build_summary(run.observed, input_name="x", input_sha256="x", input_report=run.report)["sessions"]


@pytest.mark.parametrize("log", all_logs(), ids=lambda p: p.stem)
@pytest.mark.parametrize(("seed", "resend"), [(1, 0.0), (2, 0.05), (3, 0.0)])
def test_delays_within_the_window_give_the_golden(log: Path, seed: int, resend: float) -> None:
    lines = read_lines(log.read_bytes())
    arrived, numbers = delayed(lines, WINDOW, seed, resend)
    assert sessions(arrived, numbers, WINDOW) == golden_for(log)["sessions"]


@pytest.mark.parametrize("log", all_logs(), ids=lambda p: p.stem)
def test_the_replay_clock_holds_back_by_the_window(log: Path) -> None:
    """Replay mode's partition watermark drives inactivity; held back by the window it
    never passes an event that may still arrive in order."""
    lines = read_lines(log.read_bytes())
    arrived, numbers = delayed(lines, WINDOW, 7)
    assert sessions(arrived, numbers, WINDOW, partitions=8) == golden_for(log)["sessions"]


def test_without_a_window_the_same_delays_change_the_analysis() -> None:
    """The test above can fail: arrival order analysed as it comes is not the golden."""
    log = all_logs()[0]
    arrived, numbers = delayed(read_lines(log.read_bytes()), WINDOW, 1)
    assert sessions(arrived, numbers, 0.0) != golden_for(log)["sessions"]


def test_events_later_than_the_window_are_taken_late_and_flagged() -> None:
    log = all_logs()[0]
    lines = read_lines(log.read_bytes())
    arrived, numbers = delayed(lines, 60.0, 4)
    run = analyze_lines(arrived, EngineConfig(reorder_window_s=WINDOW), TreeEditScorer(), numbers=numbers)
    assert len(run.observed.events) == sum(1 for line in lines if isinstance(decode_line(line), NormalizedEvent))
    late_runs = [r for r in run.observed.runs if r.late]
    assert late_runs, "some runs arrived more than the window late"
    assert all(not t.late or t.run_index is not None for t in run.observed.triggers)


def test_the_buffer_orders_by_time_id_and_line_and_releases_behind_the_window() -> None:
    buffer = Reorderer()
    assert buffer.offer(10.0, 2, 1, "b", WINDOW) == (False, [])
    assert buffer.offer(10.0, 1, 2, "a", WINDOW) == (False, [])
    assert buffer.offer(10.0, None, 3, "c", WINDOW) == (False, [])  # no integer id: after those with one
    late, released = buffer.offer(15.5, 4, 4, "d", WINDOW)
    assert not late and [h.value for h in released] == ["a", "b", "c"]
    late, released = buffer.offer(9.0, 5, 5, "e", WINDOW)  # before what was released: late
    assert late and released == []
    assert [(h.value, h.ts, h.late) for h in buffer.release_all()] == [("d", 15.5, False), ("e", 15.5, True)]


def test_the_clock_releases_and_makes_older_arrivals_late() -> None:
    buffer = Reorderer()
    buffer.offer(100.0, 1, 1, "a", WINDOW)
    assert buffer.due(WINDOW) == 105.0
    assert [h.value for h in buffer.release_before(100.5)] == ["a"]
    late, _ = buffer.offer(100.2, 2, 2, "b", WINDOW)  # in the window, but the clock passed it
    assert late
    assert Reorderer.from_json(buffer.to_json()).to_json() == buffer.to_json()


def test_a_flood_inside_one_window_stays_bounded() -> None:
    from streams.reorder import MAX_HELD

    buffer = Reorderer()
    released = []
    for n in range(MAX_HELD + 50):
        released += buffer.offer(100.0, n, n, n, WINDOW)[1]
    assert len(buffer.held) == MAX_HELD and [h.value for h in released] == list(range(50))
    assert buffer.offer(99.0, 9999, 9999, "x", WINDOW)[0]  # before what was released: late


def test_events_only_the_clock_overtook_are_taken_at_the_clocks_time() -> None:
    """A recording fed to a live worker: the wall clock is far ahead of its event
    times, so each event is late, taken at the clock's time, and time never goes back."""
    buffer = Reorderer()
    buffer.offer(100.0, 1, 1, "a", WINDOW)
    buffer.release_before(10_000.0)  # a live tick
    late, _ = buffer.offer(101.0, 2, 2, "b", WINDOW)
    assert late and buffer.latest == 10_000.0
    late, _ = buffer.offer(102.0, 3, 3, "c", WINDOW)
    assert late
    assert [(h.value, h.ts) for h in buffer.release_all()] == [("b", 10_000.0), ("c", 10_000.0)]
