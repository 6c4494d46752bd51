"""DistanceCalculator: short-circuits, the bounded cache, the guards and counters."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tree_edit import (
    DistanceCalculator,
    NotComparable,
    NotComparableReason,
    Program,
    TreeEditError,
    WorkspaceError,
    extract_program,
    parse_workspace,
    synthetic,
)
from tree_edit.distance import work


def xml(*types: str) -> str:
    """One stack of the given block types, chained by ``next``."""
    body = "".join(f"<block type='{t}'><next>" for t in types) + "</next></block>" * len(types)
    return f"<xml>{body}</xml>"


def test_identical_strings_are_zero_without_parsing() -> None:
    calc = DistanceCalculator()
    assert calc.between_xml("<not xml", "<not xml") == 0
    assert calc.stats.identical == 1 and calc.stats.computed == 0


def test_same_program_with_other_ids_is_zero_without_computing() -> None:
    calc = DistanceCalculator()
    a = "<xml><block type='a' id='1' x='3'/></xml>"
    b = "<xml><block type='a' id='2' x='9'/></xml>"
    assert calc.between_xml(a, b) == 0
    assert (calc.stats.identical, calc.stats.computed) == (1, 0)


def test_results_are_cached_for_both_orders() -> None:
    calc = DistanceCalculator(cache_size=8)
    a, b = xml("a", "b", "c"), xml("a", "x")
    assert calc.between_xml(a, b) == 2
    assert calc.between_xml(b, a) == 2
    assert (calc.stats.computed, calc.stats.cache_hits) == (1, 1)
    ta, tb = parse_workspace(a), parse_workspace(b)
    assert calc.between(ta, tb) == calc.between(tb, ta) == 2
    assert (calc.stats.computed, calc.stats.cache_hits) == (2, 2)


def test_cache_is_bounded_lru() -> None:
    calc = DistanceCalculator(cache_size=2)
    pairs = [(xml("a"), xml("b")), (xml("a"), xml("c")), (xml("a"), xml("d"))]
    for a, b in pairs[:2]:
        calc.between_xml(a, b)
    calc.between_xml(*pairs[0])  # refreshes pair 0
    calc.between_xml(*pairs[2])  # evicts pair 1, the least recently used
    assert calc.stats.cache_hits == 1
    calc.between_xml(*pairs[0])
    assert calc.stats.cache_hits == 2
    calc.between_xml(*pairs[1])
    assert (calc.stats.cache_hits, calc.stats.computed) == (2, 4)


def test_cache_size_zero_disables_the_cache() -> None:
    calc = DistanceCalculator(cache_size=0)
    for _ in range(3):
        assert calc.between_xml(xml("a"), xml("b")) == 1
    assert (calc.stats.computed, calc.stats.cache_hits) == (3, 0)


def test_unusable_xml_raises_workspace_error() -> None:
    with pytest.raises(WorkspaceError):
        DistanceCalculator().between_xml(xml("a"), "<xml><block>")


def test_too_many_blocks_is_not_comparable_and_counted() -> None:
    seen: list[NotComparable] = []
    calc = DistanceCalculator(max_blocks=3, on_not_comparable=seen.append)
    small, big = xml("a", "b"), xml("a", "b", "c", "d")
    assert calc.between_xml(small, xml("a", "b", "c")) == 1  # at the limit: compared
    for _ in range(2):  # second time from the cache
        with pytest.raises(NotComparable) as caught:
            calc.between_xml(small, big)
        assert isinstance(caught.value, TreeEditError)
        assert caught.value.reason is NotComparableReason.TOO_MANY_BLOCKS
        assert caught.value.n_blocks == (2, 4) and caught.value.limit == 3
    assert calc.stats.not_comparable == 2 and len(seen) == 2
    assert seen[0] is not seen[1]
    assert "too_many_blocks" in str(seen[0]) and "max_blocks" in str(seen[0])


def test_identical_strings_skip_the_guard() -> None:
    big = xml(*"abcdef")
    assert DistanceCalculator(max_blocks=2).between_xml(big, big) == 0


def test_too_costly_pairs_are_not_comparable() -> None:
    rng = random.Random(5)
    program = synthetic.random_program(rng, 120)
    a = parse_workspace(synthetic.to_xml(program))
    b = parse_workspace(synthetic.to_xml(synthetic.edited(rng, program, 5)))
    cells = work(a, b)
    assert DistanceCalculator(max_cells=cells).between(a, b) > 0
    calc = DistanceCalculator(max_cells=cells - 1)
    with pytest.raises(NotComparable) as caught:
        calc.between(a, b)
    assert caught.value.reason is NotComparableReason.TOO_COSTLY
    assert "max_cells" in str(caught.value)


def test_between_programs_short_circuits_identical_xml() -> None:
    calc = DistanceCalculator()
    first = extract_program({"workspace": xml("a", "b")})
    again = extract_program({"workspace": xml("a", "b")})
    other = extract_program({"workspace": xml("a")})
    assert isinstance(first, Program) and isinstance(again, Program)
    assert isinstance(other, Program)
    assert calc.between_programs(first, again) == 0
    assert calc.between_programs(first, other) == 1
    assert (calc.stats.identical, calc.stats.computed) == (1, 1)


@pytest.mark.parametrize("kwargs", [{"cache_size": -1}, {"max_blocks": 0}, {"max_cells": 0}])
def test_invalid_limits_are_rejected(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        DistanceCalculator(**kwargs)


def test_default_limits_compare_a_2000_block_pair() -> None:
    rng = random.Random(11)
    program = synthetic.random_program(rng, 2000)
    a = parse_workspace(synthetic.to_xml(program))
    b = parse_workspace(synthetic.to_xml(synthetic.edited(rng, program, 40)))
    assert a.n_blocks == 2000
    calc = DistanceCalculator()
    assert calc.between(a, b) > 0 and calc.stats.not_comparable == 0
