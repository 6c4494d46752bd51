"""Pure-Python exact unit-cost tree edit distance (Zhang-Shasha).

The same algorithm and inputs as the C kernel ``tree_edit._ted``; it is used
only when that extension could not be imported, and by the tests that check
the two agree.  Exact but about two orders of magnitude slower.
"""

from __future__ import annotations

from collections.abc import Sequence


def tree_distance(
    codes1: Sequence[int],
    lml1: Sequence[int],
    keyroots1: Sequence[int],
    codes2: Sequence[int],
    lml2: Sequence[int],
    keyroots2: Sequence[int],
) -> int:
    """Unit-cost edit distance between two postorder-encoded trees.

    :param codes1: label code of each node of tree 1 in postorder.
    :param lml1: postorder index of each node's leftmost leaf.
    :param keyroots1: ascending keyroot indexes (the root last).
    :returns: the minimum number of inserts, deletes and label changes.
    """
    c1, l1, c2, l2 = list(codes1), list(lml1), list(codes2), list(lml2)
    td = [[0] * len(c2) for _ in c1]
    for k1 in keyroots1:
        for k2 in keyroots2:
            _keyroot_pair(c1, l1, k1, c2, l2, k2, td)
    return td[-1][-1]


def _keyroot_pair(
    c1: list[int],
    l1: list[int],
    k1: int,
    c2: list[int],
    l2: list[int],
    k2: int,
    td: list[list[int]],
) -> None:
    """Forest distances of one keyroot pair; stores the tree distances it finds."""
    i0, j0 = l1[k1], l2[k2]
    cols = range(1, k2 - j0 + 2)
    fd = [list(range(k2 - j0 + 2))]
    for di in range(1, k1 - i0 + 2):
        i = i0 + di - 1
        li, ci, tdi = l1[i], c1[i], td[i]
        prev, row, left = fd[di - 1], [di], fd[l1[i] - i0]
        for dj in cols:
            j = j0 + dj - 1
            lj = l2[j]
            best = min(prev[dj], row[dj - 1]) + 1
            if li == i0 and lj == j0:
                value = min(best, prev[dj - 1] + (ci != c2[j]))
                tdi[j] = value
            else:
                value = min(best, left[lj - j0] + tdi[j])
            row.append(value)
        fd.append(row)
