"""vexnudge.disorder.arrival_order: seeded, bounded arrival disorder of a recorded file."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.ingest import decode_line
from streams.local import read_lines
from tests.datafiles import SAMPLE_CLASSROOM, SAMPLE_MALFORMED
from topology.schemas import NormalizedEvent
from vexnudge.disorder import arrival_order, event_times

T0 = 1_778_058_847  # 2026-05-06T09:14:07Z


def event(number: int, offset_s: int, student: str = "s1") -> bytes:
    """An envelope ingest accepts, ``offset_s`` seconds after ``T0``."""
    stamp = datetime.fromtimestamp(T0 + offset_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    payload = {"eventType": "blockMoved", "studentID": student, "sessionID": "a", "timestamp": stamp}
    return orjson.dumps({"id": number, "eventType": "blockMoved", "raw_message": orjson.dumps(payload).decode()})


def file_of(offsets: Sequence[int | None]) -> list[bytes]:
    """One line per offset: an event at that offset, or a rejected line for None."""
    return [b"not json" if at is None else event(n, at) for n, at in enumerate(offsets, start=1)]


def overtakers(order: Sequence[tuple[int, bytes]], times: Sequence[float], within_s: float) -> list[tuple[int, int]]:
    """Pairs (a, b) of line numbers where ``b`` arrived before ``a`` although ``a``'s time + bound < ``b``'s time."""
    found = []
    for p, (b, _) in enumerate(order):
        for a, _ in order[p + 1 :]:
            if times[a - 1] + within_s < times[b - 1]:
                found.append((a, b))
    return found


def originals(order: Sequence[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """The first send of each line number (the copies of resent lines dropped)."""
    seen: set[int] = set()
    first = []
    for number, line in order:
        if number not in seen:
            seen.add(number)
            first.append((number, line))
    return first


def test_the_same_seed_gives_the_same_order_and_another_seed_another() -> None:
    lines = read_lines(SAMPLE_CLASSROOM.read_bytes())
    assert arrival_order(lines, 5, seed=7, resend=0.05) == arrival_order(lines, 5, seed=7, resend=0.05)
    assert arrival_order(lines, 5, seed=7) != arrival_order(lines, 5, seed=8)


def test_no_delay_keeps_a_file_in_event_order_and_equal_times_in_file_order() -> None:
    lines = file_of([0, 0, 3, 3, 3, 9])
    assert arrival_order(lines, 0, seed=1) == list(enumerate(lines, start=1))


def test_no_delay_sorts_a_file_by_event_time_stably() -> None:
    lines = file_of([5, 1, 5, 1])
    assert [n for n, _ in arrival_order(lines, 0, seed=3)] == [2, 4, 1, 3]


def test_every_line_is_sent_once_with_its_file_line_number() -> None:
    lines = read_lines(SAMPLE_MALFORMED.read_bytes())
    order = arrival_order(lines, 10, seed=11)
    assert sorted(order) == sorted(enumerate(lines, start=1))
    assert order != list(enumerate(lines, start=1))  # something did move


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_no_line_of_a_fixture_is_overtaken_by_more_than_the_bound(seed: int) -> None:
    lines = read_lines(SAMPLE_MALFORMED.read_bytes())  # blank and rejected lines among events
    times = event_times(lines)
    for within_s in (0.0, 2.0, 5.0):
        order = arrival_order(lines, within_s, seed=seed, resend=0.05)
        assert overtakers(order, times, within_s) == []


def test_resent_lines_are_extra_copies_of_events_after_their_original() -> None:
    lines = read_lines(SAMPLE_MALFORMED.read_bytes())
    order = arrival_order(lines, 5, seed=4, resend=0.05)
    accepted = sum(1 for line in lines if not _rejected(line))
    copies = Counter(n for n, _ in order) - Counter(range(1, len(lines) + 1))
    assert sum(copies.values()) == round(0.05 * accepted)
    assert set(copies.values()) == {1}  # sent twice at most
    assert all(not _rejected(lines[n - 1]) for n in copies)  # only lines ingest decodes
    assert originals(order) == arrival_order(lines, 5, seed=4)  # the first sends are as without resends


def test_rejected_and_blank_lines_keep_their_place_among_their_neighbours() -> None:
    lines = [b"", b"{", *file_of([0, 10]), b"   ", b"[1]", *file_of([20])]
    assert event_times(lines)[:2] == [-math.inf, -math.inf]
    assert event_times(lines)[4:6] == event_times(lines)[3:5]  # the time of the line before
    assert [n for n, _ in arrival_order(lines, 0, seed=0)] == [1, 2, 3, 4, 5, 6, 7]
    order = [n for n, _ in arrival_order(lines, 5, seed=9)]
    assert order[:2] == [1, 2]  # leading lines first, in file order
    assert order.index(3) < order.index(4) < order.index(7)
    assert order.index(5) < order.index(7) and order.index(6) < order.index(7)
    assert order.index(3) < order.index(5) and order.index(3) < order.index(6)


@settings(max_examples=200, deadline=None)
@given(
    offsets=st.lists(st.one_of(st.none(), st.integers(0, 40)), max_size=40),
    within_s=st.sampled_from([0.0, 0.5, 1.0, 3.0, 10.0]),
    seed=st.integers(0, 2**32),
    resend=st.floats(0, 0.95),
)
def test_any_file_any_seed_keeps_every_line_within_the_bound(
    offsets: list[int | None], within_s: float, seed: int, resend: float
) -> None:
    lines = file_of(offsets)
    order = arrival_order(lines, within_s, seed, resend)
    assert overtakers(order, event_times(lines), within_s) == []
    assert sorted(originals(order)) == list(enumerate(lines, start=1))
    assert len(order) - len(lines) == round(resend * sum(1 for at in offsets if at is not None))
    assert order == arrival_order(lines, within_s, seed, resend)


@pytest.mark.parametrize(
    ("within_s", "resend"), [(-1.0, 0.0), (math.nan, 0.0), (math.inf, 0.0), (5.0, 1.0), (5.0, -0.1), (5.0, math.nan)]
)
def test_a_meaningless_bound_or_fraction_is_refused(within_s: float, resend: float) -> None:
    with pytest.raises(ValueError, match="must be"):
        arrival_order(file_of([0]), within_s, seed=0, resend=resend)


def _rejected(line: bytes) -> bool:
    """Whether ingest rejects the line (or skips it as blank)."""
    return not isinstance(decode_line(line), NormalizedEvent)
