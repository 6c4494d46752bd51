"""A record read but never acknowledged must hold its partition's commit (Faust's
own check misses a hole of one record), and the healer must find both holes and
a lost tail (records beyond the commit, none in flight), but not changelogs,
paused partitions or a partition that is merely up to date."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, NamedTuple

from intervaltree import IntervalTree

from streams.agents.watchdog import stuck_partitions
from topology.seam.transport import Consumer, covered


class TP(NamedTuple):
    topic: str
    partition: int


RAW, CLOCK, CHANGELOG = TP("vx.raw", 0), TP("vx.clock", 3), TP("vx-students-changelog", 0)
TOPICS = {"vx.raw", "vx.clock"}


def _consumer(committed: dict[TP, int | None], acked: dict[TP, list[int]] | None = None) -> Any:
    """Faust's consumer bookkeeping, without a broker or an app."""
    consumer = object.__new__(Consumer)
    consumer._committed_offset = defaultdict(lambda: None, committed)
    consumer._acked = defaultdict(list, {tp: sorted(v) for tp, v in (acked or {}).items()})
    consumer._acked_index = defaultdict(set, {tp: set(v) for tp, v in (acked or {}).items()})
    consumer._gap = defaultdict(IntervalTree)
    consumer._read_offset = defaultdict(lambda: None)
    return consumer


def test_one_missing_record_holds_the_commit() -> None:
    consumer = _consumer({RAW: 10}, {RAW: [11, 12]})
    assert consumer._new_offset(RAW) is None  # Faust alone would commit 13, past offset 10
    consumer._acked[RAW].insert(0, 10)
    consumer._acked_index[RAW].add(10)
    assert consumer._new_offset(RAW) == 13


def test_offsets_the_log_lacks_do_not_hold_the_commit() -> None:
    consumer = _consumer({RAW: 10}, {RAW: [12, 13]})
    consumer._gap[RAW].addi(10, 12)  # 10 and 11 are not in the log (compacted, markers)
    assert consumer._new_offset(RAW) == 14


def test_nothing_committed_yet_commits_what_was_acknowledged() -> None:
    assert _consumer({}, {RAW: [5, 6]})._new_offset(RAW) == 7


def test_covered() -> None:
    tree = IntervalTree()
    tree.addi(3, 5)
    tree.addi(5, 8)
    assert covered(tree, 3, 8) and covered(tree, 4, 6) and covered(tree, 9, 9)
    assert not covered(tree, 2, 4) and not covered(tree, 7, 9) and not covered(None, 1, 2)


class Message(NamedTuple):
    tp: TP
    offset: int


def _watched(
    committed: dict[TP, int | None],
    highwater: dict[TP, int],
    *,
    acked: dict[TP, list[int]] | None = None,
    in_flight: tuple[TP, ...] = (),
    paused: tuple[TP, ...] = (),
) -> Any:
    consumer = _consumer(committed, acked)
    consumer._unacked_messages = {Message(tp, 0) for tp in in_flight}
    consumer._paused_partitions = set(paused)
    consumer.assignment = lambda: set(highwater)
    consumer.highwater = highwater.get
    return consumer


def test_a_hole_below_acknowledged_records_is_stuck() -> None:
    consumer = _watched({RAW: 10}, {RAW: 20}, acked={RAW: [11, 12]}, in_flight=(RAW,))
    assert stuck_partitions(consumer, TOPICS) == {RAW: 10}


def test_a_lost_tail_is_stuck_but_an_up_to_date_partition_is_not() -> None:
    consumer = _watched({RAW: 10, CLOCK: None}, {RAW: 11, CLOCK: 1, CHANGELOG: 50})
    assert stuck_partitions(consumer, TOPICS) == {RAW: 10, CLOCK: 0}  # the changelog is not an input
    assert stuck_partitions(_watched({RAW: 11}, {RAW: 11}), TOPICS) == {}


def test_records_in_flight_or_acknowledged_or_a_paused_partition_are_not_stuck() -> None:
    assert stuck_partitions(_watched({RAW: 10}, {RAW: 15}, in_flight=(RAW,)), TOPICS) == {}
    assert stuck_partitions(_watched({RAW: 10}, {RAW: 15}, acked={RAW: [10, 11]}), TOPICS) == {}
    assert stuck_partitions(_watched({RAW: 10}, {RAW: 15}, paused=(RAW,)), TOPICS) == {}


def test_a_partition_that_moved_mid_check_is_not_stuck() -> None:
    consumer = _watched({RAW: 10}, {RAW: 15})

    def moved(tp: TP) -> int:
        raise AssertionError("Partition is not assigned")

    consumer.highwater = moved
    assert stuck_partitions(consumer, TOPICS) == {}
