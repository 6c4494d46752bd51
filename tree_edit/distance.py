"""The exact tree edit distance between two parsed programs.

Cost model: inserting or deleting a block costs 1, a connector 0; relabelling
costs 0 between equal labels of the same kind and 1 otherwise; the two ROOTs
always correspond.  Connectors are spliced out first (they never change the
distance, see :mod:`tree_edit.shape`), then Zhang-Shasha runs on the smaller of
the left-to-right and right-to-left decompositions, in C when the extension
``tree_edit._ted`` is built and in pure Python otherwise.
"""

from __future__ import annotations

import warnings
from array import array
from collections.abc import Callable

from tree_edit import zhang_shasha
from tree_edit.shape import Decomposition, Shape
from tree_edit.tree import Tree

_Kernel = Callable[..., int]

#: The cost model above as data, in the terms of the golden files'
#: ``semantics.edit_costs`` (``docs/tree_edit.md``).
COSTS: dict[str, int] = {
    "block_insert": 1,
    "block_delete": 1,
    "connector_insert": 0,
    "connector_delete": 0,
    "rename_if_labels_differ": 1,
    "rename_if_labels_equal": 0,
    "root_to_root": 0,
}

try:
    from tree_edit._ted import tree_distance as _c_kernel
except ImportError as _exc:  # pragma: no cover - exercised only without a compiler
    warnings.warn(
        f"tree_edit: C extension unavailable ({_exc}); using the pure-Python "
        "distance, which is exact but far slower. Reinstall the package with a C "
        "compiler present (scripts/bootstrap.sh) to build it.",
        RuntimeWarning,
        stacklevel=2,
    )
    KERNEL: _Kernel = zhang_shasha.tree_distance
    BACKEND = "python"
else:
    KERNEL = _c_kernel
    BACKEND = "c"


#: Measured CPU cost of one table cell per kernel (docs/performance.md), used to
#: turn a CPU budget into a work limit that is decided before computing.
NS_PER_CELL: dict[str, float] = {"c": 3.0, "python": 350.0}


def cells_within(budget_ms: float, backend: str | None = None) -> int:
    """The most table cells the kernel fills within ``budget_ms`` of CPU."""
    return max(1, int(budget_ms * 1e6 / NS_PER_CELL[backend or BACKEND]))


def distance(a: Tree, b: Tree) -> int:
    """Exact edit distance between two programs (no size limit; see the calculator).

    :param a: one program, as returned by :func:`tree_edit.parse_workspace`.
    :param b: the other program.
    :returns: the minimum total cost of turning ``a`` into ``b``.
    """
    return shape_distance(a.shape, b.shape, KERNEL)


def work(a: Tree, b: Tree) -> int:
    """Table cells the distance of this pair fills (its cost, before running it)."""
    return _plan(a.shape, b.shape)[2]


def shape_distance(sa: Shape, sb: Shape, kernel: _Kernel) -> int:
    """The distance of two shapes with the given Zhang-Shasha kernel."""
    if sa.same_as(sb):
        return 0
    da, db, _ = _plan(sa, sb)
    codes_b = _codes_in(sa, sb, db)
    return kernel(da.codes, da.lml, da.keyroots, codes_b, db.lml, db.keyroots)


def _plan(sa: Shape, sb: Shape) -> tuple[Decomposition, Decomposition, int]:
    """The cheaper decomposition direction for this pair and its cost in cells."""
    left = sa.left.cost * sb.left.cost
    right = sa.right.cost * sb.right.cost
    if right <= left:
        return sa.right, sb.right, right
    return sa.left, sb.left, left


def _codes_in(sa: Shape, sb: Shape, db: Decomposition) -> array[int]:
    """``b``'s label codes renumbered so equal labels share ``a``'s code."""
    index = sa.label_index
    mapping = [index.get(key, -1 - n) for n, key in enumerate(sb.labels)]
    return array("i", map(mapping.__getitem__, db.codes))
