"""The engine's :class:`~streams.programs.Scorer`, backed by ``tree_edit``.

Parses each program once (a small LRU of parsed programs keyed by content
digest) and measures distances with the guarded, cached
:class:`tree_edit.DistanceCalculator`; pairs refused by its guards (too many
blocks, or planned work over the CPU budget) count as not comparable.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from streams.programs import ProgramInfo, UnusableWorkspace, digest
from topology.settings import default
from tree_edit import DistanceCalculator, NotComparable, Tree, WorkspaceError, parse_workspace
from tree_edit.distance import cells_within
from tree_edit.tree import empty_tree

#: The default CPU budget of one distance (TREE_EDIT_MAX_CPU_MS).
DEFAULT_MAX_CPU_MS: float = default("tree_edit_max_cpu_ms")


class TreeEditScorer:
    """Parses and compares programs; ``max_blocks`` guards the distance."""

    def __init__(
        self,
        max_blocks: int = default("tree_edit_max_blocks"),
        cache_size: int = default("tree_edit_cache_size"),
        tree_cache_size: int = 256,
        on_not_comparable: Callable[[NotComparable], None] | None = None,
        max_cpu_ms: float = DEFAULT_MAX_CPU_MS,
    ) -> None:
        """``max_cpu_ms``: a pair whose planned work would take longer is not comparable."""
        self.calculator = DistanceCalculator(
            cache_size=cache_size,
            max_blocks=max_blocks,
            max_cells=cells_within(max_cpu_ms),
            on_not_comparable=on_not_comparable,
        )
        self.tree_cache_size = tree_cache_size
        self._trees: OrderedDict[str, Tree] = OrderedDict()

    @classmethod
    def from_settings(
        cls,
        settings: Any,
        on_not_comparable: Callable[[NotComparable], None] | None = None,
    ) -> TreeEditScorer:
        """Built from :class:`topology.settings.Settings` (duck-typed: stays pure)."""
        return cls(
            max_blocks=settings.tree_edit_max_blocks,
            cache_size=settings.tree_edit_cache_size,
            max_cpu_ms=settings.tree_edit_max_cpu_ms,
            on_not_comparable=on_not_comparable,
        )

    @property
    def not_comparable(self) -> int:
        """Pairs refused by the guards so far."""
        return self.calculator.stats.not_comparable

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
            while len(self._trees) > self.tree_cache_size:
                self._trees.popitem(last=False)
        else:
            self._trees.move_to_end(key)
        return tree

    def inspect(self, xml: str | None) -> ProgramInfo:
        """Statistics of a program; raise UnusableWorkspace for bad XML."""
        tree = self._tree(xml)
        return ProgramInfo(tree.n_blocks, tree.n_stacks, tree.label_tree_size)

    def distance(self, before: str | None, after: str | None) -> int | None:
        """The distance, or None when the guards refuse the pair."""
        try:
            return self.calculator.between(self._tree(before), self._tree(after))
        except NotComparable:
            return None
