"""The compact form of a program tree that the distance algorithms work on.

Connector nodes cost nothing to insert or delete, so they never change a
distance: any mapping that keeps a connector can drop it (a connector rename
costs at least the free delete + insert; a connector-to-block rename costs 1,
the same as deleting the connector for free and the block for 1), and a
mapping on the blocks alone stays valid once connectors are spliced out
(ancestry and left-to-right order between blocks do not change).  The distance
is therefore computed on the *contracted* tree: ROOT and blocks, each block's
children being the blocks plugged into its inputs, under unit costs.

For that tree a :class:`Shape` holds the Zhang-Shasha arrays (postorder label
codes, leftmost leaves, keyroots) for both the left-to-right and the mirrored
(right-to-left) decomposition.  The mirrored one is much cheaper for Blockly
programs, whose long ``next`` chains run down the rightmost children.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, Self, TypeVar


class _TreeNode(Protocol):
    @property
    def key(self) -> str: ...

    @property
    def children(self) -> Sequence[Self]: ...


_N = TypeVar("_N", bound=_TreeNode)


@dataclass(frozen=True, slots=True, eq=False)
class Decomposition:
    """Zhang-Shasha arrays of one traversal direction (all ``array('i')``).

    :ivar codes: label code of each node, in postorder.
    :ivar lml: postorder index of each node's leftmost leaf.
    :ivar keyroots: postorder indexes of the keyroots, ascending (ROOT last).
    :ivar cost: sum of the keyroots' subtree sizes; the work of a pair is
        ``cost_a * cost_b`` table cells.
    """

    codes: array[int]
    lml: array[int]
    keyroots: array[int]
    cost: int


@dataclass(frozen=True, slots=True, eq=False)
class Shape:
    """The contracted tree of a program in both decompositions.

    :ivar labels: the distinct node keys; a node's code indexes this tuple.
    :ivar label_index: ``labels`` inverted.
    :ivar left: left-to-right decomposition.
    :ivar right: right-to-left (mirrored) decomposition.
    :ivar digest: blake2b-128 hex digest of the contracted tree.
    """

    labels: tuple[str, ...]
    label_index: dict[str, int]
    left: Decomposition
    right: Decomposition
    digest: str

    @property
    def size(self) -> int:
        """Nodes of the contracted tree (ROOT + blocks)."""
        return len(self.left.codes)

    def same_as(self, other: Shape) -> bool:
        """Exact equality of the contracted trees (labels and structure)."""
        return (
            self.digest == other.digest
            and self.labels == other.labels
            and self.left.codes == other.left.codes
            and self.left.lml == other.left.lml
        )


def build_shape(root: _N, is_connector: Callable[[_N], bool]) -> Shape:
    """Contract ``root``'s tree (splicing out connectors) and decompose it both ways."""
    keys, kids = _contract(root, is_connector)
    label_index: dict[str, int] = {}
    left = _decompose(keys, kids, label_index, mirrored=False)
    right = _decompose(keys, kids, label_index, mirrored=True)
    labels = tuple(label_index)
    hasher = hashlib.blake2b(digest_size=16)
    hasher.update("\x1f".join(labels).encode("utf-8", "surrogatepass"))
    hasher.update(b"\x00" + left.codes.tobytes() + b"\x00" + left.lml.tobytes())
    return Shape(labels, label_index, left, right, hasher.hexdigest())


def _contract(root: _N, is_connector: Callable[[_N], bool]) -> tuple[list[str], list[list[int]]]:
    """Node keys and child lists of the contracted tree, in preorder (ROOT = 0)."""
    keys: list[str] = []
    kids: list[list[int]] = []
    stack: list[tuple[_N, int]] = [(root, -1)]
    while stack:
        node, parent = stack.pop()
        index = len(keys)
        keys.append(node.key)
        kids.append([])
        if parent >= 0:
            kids[parent].append(index)
        below: list[_N] = []
        for child in node.children:
            if is_connector(child):
                below.extend(child.children)
            else:
                below.append(child)
        stack.extend((child, index) for child in reversed(below))
    return keys, kids


def _decompose(keys: list[str], kids: list[list[int]], label_index: dict[str, int], mirrored: bool) -> Decomposition:
    """Postorder codes, leftmost leaves and keyroots of one direction."""
    n = len(keys)
    ordered = [k[::-1] for k in kids] if mirrored else kids
    codes, lml, keyroots = array("i"), array("i"), array("i")
    leftmost = [0] * n
    is_keyroot = [False] * n
    is_keyroot[0] = True
    position = [0] * n
    cost = 0
    stack = [0]
    while stack:
        node = stack[-1]
        children = ordered[node]
        k = position[node]
        if k < len(children):
            position[node] = k + 1
            is_keyroot[children[k]] = k > 0
            stack.append(children[k])
            continue
        stack.pop()
        post = len(codes)
        codes.append(label_index.setdefault(keys[node], len(label_index)))
        leaf = leftmost[children[0]] if children else post
        leftmost[node] = leaf
        lml.append(leaf)
        if is_keyroot[node]:
            keyroots.append(post)
            cost += post - leaf + 1
    return Decomposition(codes, lml, keyroots, cost)
