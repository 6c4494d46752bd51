"""The engine's :class:`~streams.programs.Scorer`, backed by ``tree_edit``.

Keeps a small LRU of parsed programs keyed by content digest, so the previous
run's program is parsed once, and counts pairs refused by the size guard.
"""

from __future__ import annotations

from collections import OrderedDict

from tree_edit.distance import distance as tree_distance
from tree_edit.errors import NotComparable, WorkspaceError
from tree_edit.parse import parse_workspace
from tree_edit.tree import Tree, empty_tree

from streams.programs import ProgramInfo, UnusableWorkspace, digest


class TreeEditScorer:
    """Parses and compares programs; ``max_blocks`` guards the distance."""

    def __init__(self, max_blocks: int = 2000, cache_size: int = 256) -> None:
        self.max_blocks = max_blocks
        self.cache_size = cache_size
        self.not_comparable = 0
        self._trees: OrderedDict[str, Tree] = OrderedDict()

    def _tree(self, xml: str | None) -> Tree:
        if xml is None:
            return empty_tree()
        key = digest(xml)
        tree = self._trees.get(key)
        if tree is None:
            try:
                tree = parse_workspace(xml)
            except WorkspaceError as exc:
                raise UnusableWorkspace(exc.reason.value, exc.detail) from exc
            self._trees[key] = tree
            while len(self._trees) > self.cache_size:
                self._trees.popitem(last=False)
        else:
            self._trees.move_to_end(key)
        return tree

    def inspect(self, xml: str | None) -> ProgramInfo:
        """Statistics of a program; raise UnusableWorkspace for bad XML."""
        tree = self._tree(xml)
        return ProgramInfo(tree.n_blocks, tree.n_stacks, tree.label_tree_size)

    def distance(self, before: str | None, after: str | None) -> int | None:
        """The distance, or None (counted) when a program is over the guard."""
        a, b = self._tree(before), self._tree(after)
        if max(a.n_blocks, b.n_blocks) > self.max_blocks:
            self.not_comparable += 1
            return None
        try:
            return tree_distance(a, b)
        except NotComparable:
            self.not_comparable += 1
            return None
