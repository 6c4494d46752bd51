"""Property tests: the production distance against the apted reference.

Programs are Blockly-like (the synthetic generator: chains, C-blocks, reporters,
shadows, stray stacks) or arbitrary small trees over a tiny label alphabet
(many equal labels, odd shapes); second programs come from random edit scripts.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tree_edit import Tree, distance, parse_workspace, synthetic, zhang_shasha
from tree_edit.distance import shape_distance
from tree_edit.reference import reference_distance

SLOW = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FAST = settings(max_examples=150, deadline=None)


@st.composite
def blockly_pairs(draw: st.DrawFn, max_blocks: int = 75) -> tuple[Tree, Tree, Tree]:
    """A program of up to ``max_blocks`` blocks (~2x tree nodes) and two edited versions."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    first = synthetic.random_program(rng, draw(st.integers(0, max_blocks)))
    second = synthetic.edited(rng, first, draw(st.integers(0, 10)))
    third = synthetic.edited(rng, second, draw(st.integers(0, 10)))
    a, b, c = (parse_workspace(synthetic.to_xml(p, rng)) for p in (first, second, third))
    return a, b, c


_LEAF = st.tuples(st.sampled_from("abc"), st.sampled_from(["", "1", "2"]))


def _xml_block(node: tuple[Any, ...]) -> str:
    kind, field, *inputs = node
    parts = [f"<block type='{kind}'>"]
    if field:
        parts.append(f"<field name='F'>{field}</field>")
    for tag, name, block in inputs:
        attr = "" if tag == "next" else f" name='{name}'"
        parts.append(f"<{tag}{attr}>{_xml_block(block)}</{tag}>")
    parts.append("</block>")
    return "".join(parts)


_TREES = st.recursive(
    _LEAF,
    lambda inner: st.builds(
        lambda leaf, inputs: (*leaf, *inputs),
        _LEAF,
        st.lists(
            st.tuples(st.sampled_from(["value", "statement", "next"]), st.sampled_from("XY"), inner),
            min_size=1,
            max_size=3,
        ),
    ),
    max_leaves=40,
)


@st.composite
def arbitrary_programs(draw: st.DrawFn) -> Tree:
    stacks = draw(st.lists(_TREES, max_size=3))
    return parse_workspace("<xml>" + "".join(_xml_block(s) for s in stacks) + "</xml>")


@SLOW
@given(blockly_pairs())
def test_blockly_like_programs_match_the_reference(trees: tuple[Tree, Tree, Tree]) -> None:
    a, b, _ = trees
    assert distance(a, b) == reference_distance(a, b)


@pytest.mark.parametrize("seed", range(20))
def test_full_size_programs_match_the_reference(seed: int) -> None:
    """Hypothesis favours small programs; this sweep pins 55-75 blocks (~150 nodes)."""
    rng = random.Random(1000 + seed)
    program = synthetic.random_program(rng, 55 + seed)
    a = parse_workspace(synthetic.to_xml(program, rng))
    b = parse_workspace(synthetic.to_xml(synthetic.edited(rng, program, 1 + seed % 12), rng))
    assert distance(a, b) == reference_distance(a, b)


@SLOW
@given(arbitrary_programs(), arbitrary_programs())
def test_arbitrary_programs_match_the_reference(a: Tree, b: Tree) -> None:
    assert distance(a, b) == reference_distance(a, b)


@FAST
@given(blockly_pairs(max_blocks=120))
def test_metric_properties(trees: tuple[Tree, Tree, Tree]) -> None:
    a, b, c = trees
    assert distance(a, a) == 0
    assert distance(a, b) == distance(b, a)
    assert distance(a, c) <= distance(a, b) + distance(b, c)
    assert abs(a.n_blocks - b.n_blocks) <= distance(a, b) <= a.n_blocks + b.n_blocks


@FAST
@given(arbitrary_programs(), arbitrary_programs(), arbitrary_programs())
def test_metric_properties_on_arbitrary_trees(a: Tree, b: Tree, c: Tree) -> None:
    assert distance(a, a) == distance(b, b) == 0
    assert distance(a, b) == distance(b, a)
    assert distance(a, c) <= distance(a, b) + distance(b, c)


@FAST
@given(blockly_pairs(max_blocks=40))
def test_python_fallback_matches_the_c_kernel(trees: tuple[Tree, Tree, Tree]) -> None:
    a, b, _ = trees
    assert shape_distance(a.shape, b.shape, zhang_shasha.tree_distance) == distance(a, b)
