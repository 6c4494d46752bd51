"""The reference distance: the ``apted`` package on the full trees.

It applies the cost model literally, connectors included, with no reduction:
inserting or deleting a block costs 1 and a connector 0; relabelling costs 0
between equal keys and 1 otherwise; ROOT can neither be removed nor relabelled
into anything else (it costs more than any real edit script), so the two ROOTs
always correspond.  It is slow and exists to check :func:`tree_edit.distance`
(tests) and to be the baseline it is measured against (benchmark).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from apted import APTED, Config

from tree_edit.tree import Node, NodeKind, Tree


class _Costs(Config):  # type: ignore[misc]  # apted ships no type hints
    """apted's cost hooks for program trees."""

    def __init__(self, forbidden: int) -> None:
        self.forbidden = forbidden

    def delete(self, node: Node) -> int:
        return self._presence(node)

    def insert(self, node: Node) -> int:
        return self._presence(node)

    def rename(self, node1: Node, node2: Node) -> int:
        if (node1.kind is NodeKind.ROOT) != (node2.kind is NodeKind.ROOT):
            return self.forbidden
        return int(node1.key != node2.key)

    def children(self, node: Node) -> tuple[Node, ...]:
        return node.children

    def _presence(self, node: Node) -> int:
        if node.kind is NodeKind.ROOT:
            return self.forbidden
        return 1 if node.kind is NodeKind.BLOCK else 0


def reference_distance(a: Tree, b: Tree) -> int:
    """The distance computed by the ``apted`` package on the unreduced trees."""
    forbidden = a.label_tree_size + b.label_tree_size + 1
    with _recursion_room(a.label_tree_size + b.label_tree_size):
        return int(APTED(a.root, b.root, _Costs(forbidden)).compute_edit_distance())


@contextmanager
def _recursion_room(depth: int) -> Iterator[None]:
    """apted indexes trees recursively; deep ``next`` chains need more stack."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 4 * depth + 1000))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)
