"""The distance: worked examples, kernels against each other, the reference."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from array import array
from typing import Any

import pytest

import tree_edit
from tests.datafiles import FIXTURES
from tree_edit import distance, parse_workspace, synthetic, zhang_shasha
from tree_edit.distance import KERNEL, shape_distance, work
from tree_edit.reference import reference_distance

#: Tests of the C kernel itself; without it, test_the_c_kernel_is_built_and_used fails alone.
needs_c = pytest.mark.skipif(tree_edit.BACKEND != "c", reason="C extension not built")

EXAMPLES: list[dict[str, Any]] = json.loads((FIXTURES / "edit_distance_examples.json").read_text(encoding="utf-8"))[
    "examples"
]


@pytest.mark.parametrize("example", EXAMPLES, ids=[e["name"] for e in EXAMPLES])
def test_worked_examples_both_directions(example: dict[str, Any]) -> None:
    before, after = parse_workspace(example["before"]), parse_workspace(example["after"])
    want = example["distance"]
    assert distance(before, after) == want
    assert distance(after, before) == want
    assert reference_distance(before, after) == reference_distance(after, before) == want
    python = zhang_shasha.tree_distance
    assert shape_distance(before.shape, after.shape, python) == want
    assert shape_distance(after.shape, before.shape, python) == want


def test_examples_cover_the_readme_table() -> None:
    assert len(EXAMPLES) == 14


def test_the_c_kernel_is_built_and_used() -> None:
    assert tree_edit.BACKEND == "c", "the C extension did not build: run scripts/bootstrap.sh"
    assert KERNEL is not zhang_shasha.tree_distance


@pytest.mark.parametrize("seed", range(6))
def test_c_and_python_kernels_agree_on_larger_programs(seed: int) -> None:
    rng = random.Random(seed)
    program = synthetic.random_program(rng, 60 + 30 * seed)
    a = parse_workspace(synthetic.to_xml(program, rng))
    b = parse_workspace(synthetic.to_xml(synthetic.edited(rng, program, 6 + seed), rng))
    fast = distance(a, b)
    assert fast == shape_distance(a.shape, b.shape, zhang_shasha.tree_distance)
    assert fast == distance(b, a)


def test_both_decompositions_give_the_same_distance() -> None:
    rng = random.Random(7)
    program = synthetic.random_program(rng, 80)
    a = parse_workspace(synthetic.to_xml(program))
    b = parse_workspace(synthetic.to_xml(synthetic.edited(rng, program, 8)))
    left = KERNEL(a.shape.left.codes, a.shape.left.lml, a.shape.left.keyroots, *_codes_lml_keyroots(a, b, "left"))
    right = KERNEL(a.shape.right.codes, a.shape.right.lml, a.shape.right.keyroots, *_codes_lml_keyroots(a, b, "right"))
    assert left == right == distance(a, b)


def _codes_lml_keyroots(a: tree_edit.Tree, b: tree_edit.Tree, side: str) -> tuple[Any, ...]:
    decomposition = getattr(b.shape, side)
    index = a.shape.label_index
    mapping = [index.get(key, -1 - n) for n, key in enumerate(b.shape.labels)]
    codes = array("i", [mapping[c] for c in decomposition.codes])
    return codes, decomposition.lml, decomposition.keyroots


def test_mirrored_decomposition_is_cheaper_for_long_chains() -> None:
    xml = (
        "<xml>"
        + "<block type='d'><value name='V'><block type='r'/></value><next>" * 300
        + "</next></block>" * 300
        + "</xml>"
    )
    tree = parse_workspace(xml)
    assert tree.shape.right.cost < tree.shape.left.cost / 50
    assert work(tree, tree) == tree.shape.right.cost**2


def test_empty_against_n_blocks_costs_n() -> None:
    empty = parse_workspace("")
    rng = random.Random(3)
    program = parse_workspace(synthetic.to_xml(synthetic.random_program(rng, 150)))
    assert distance(empty, program) == distance(program, empty) == 150
    assert distance(empty, empty) == 0


@needs_c
@pytest.mark.parametrize(
    "arrays",
    [
        ([], [], [], [0], [0], [0]),  # empty tree
        ([0, 0], [0], [1], [0], [0], [0]),  # lml shorter than codes
        ([0, 0], [0, 5], [1], [0], [0], [0]),  # leftmost leaf after the node
        ([0, 0], [0, 0], [0], [0], [0], [0]),  # root is not the last keyroot
        ([0, 0], [0, 0], [1, 1], [0], [0], [0]),  # keyroots not ascending
        ([0] * 4, [0, 0, 1, 0], [2, 3], [0], [0], [0]),  # node 1's leaf outside keyroot 2's subtree
    ],
)
def test_c_kernel_rejects_malformed_arrays(arrays: tuple[list[int], ...]) -> None:
    with pytest.raises(ValueError, match="malformed"):
        KERNEL(*(array("i", values) for values in arrays))


@needs_c
def test_c_kernel_rejects_non_int32_buffers() -> None:
    with pytest.raises(TypeError):
        KERNEL(array("d", [0.0]), array("i", [0]), array("i", [0]), array("i", [0]), array("i", [0]), array("i", [0]))


def test_tree_edit_stays_pure() -> None:
    code = (
        "import sys, tree_edit, tree_edit.reference, tree_edit.synthetic;"
        "print(' '.join(sorted(m.split('.')[0] for m in sys.modules)))"
    )
    loaded = set(
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    )
    forbidden = {
        "faust",
        "aiokafka",
        "mode",
        "aiohttp",
        "asyncpg",
        "ollama",
        "pydantic",
        "pydantic_settings",
        "prometheus_client",
        "topology",
        "streams",
        "feedback",
        "delivery",
        "orjson",
    }
    assert not loaded & forbidden
