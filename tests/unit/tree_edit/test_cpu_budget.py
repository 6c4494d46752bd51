"""The distance's CPU budget becomes a work limit decided before computing."""

from __future__ import annotations

import random

from streams.scoring import TreeEditScorer
from tree_edit import parse_workspace
from tree_edit.distance import NS_PER_CELL, cells_within, work
from tree_edit.synthetic import edited, random_program, to_xml


def test_budget_to_cells() -> None:
    assert cells_within(1.0, "c") == int(1e6 / NS_PER_CELL["c"])
    assert cells_within(1.0, "python") < cells_within(1.0, "c")


def test_a_pair_over_the_budget_is_not_comparable_and_under_it_is() -> None:
    rng = random.Random(3)
    a = random_program(rng, 300)
    b = edited(rng, a, 10)
    xa, xb = to_xml(a), to_xml(b)
    cells = work(parse_workspace(xa), parse_workspace(xb))
    ms_needed = cells * NS_PER_CELL["c"] / 1e6
    tight = TreeEditScorer(max_cpu_ms=ms_needed / 2)
    assert tight.distance(xa, xb) is None and tight.not_comparable == 1
    roomy = TreeEditScorer(max_cpu_ms=ms_needed * 2)
    assert isinstance(roomy.distance(xa, xb), int) and roomy.not_comparable == 0
