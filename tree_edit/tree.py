"""Labelled ordered trees of Blockly programs.

A :class:`Tree` is what :func:`tree_edit.parse_workspace` returns: a synthetic
ROOT whose children are the top-level stacks, *block* nodes labelled with their
type, own fields and shadow entries, and *connector* nodes (``next``,
``value:NAME``, ``statement:NAME``) between a block and each block plugged
into it.  Trees are immutable once built and carry everything the distance
needs (:class:`~tree_edit.shape.Shape`), so a program parsed once can be
compared many times.
"""

from __future__ import annotations

from enum import StrEnum

from tree_edit.shape import Shape, build_shape


class NodeKind(StrEnum):
    """The three kinds of node; relabelling across kinds always costs 1."""

    ROOT = "root"
    BLOCK = "block"
    CONNECTOR = "connector"


class Node:
    """One node of a program tree.

    :ivar kind: root, block or connector.
    :ivar label: human-readable label: the canonical text ``type|F=v|N.F=v`` of
        a block, ``next`` / ``value:N`` / ``statement:N`` of a connector, ``ROOT``.
    :ivar key: an injective encoding of (kind, label contents); two nodes have
        equal keys exactly when relabelling one into the other costs 0.
    :ivar children: the child nodes, in tree order.
    """

    __slots__ = ("kind", "label", "key", "children")

    def __init__(self, kind: NodeKind, label: str, key: str, children: tuple[Node, ...] = ()) -> None:
        self.kind = kind
        self.label = label
        self.key = key
        self.children = children

    def __repr__(self) -> str:
        return f"Node({self.kind.value}, {self.label!r}, {len(self.children)} children)"


ROOT_LABEL = "ROOT"
ROOT_KEY = "R"


class Tree:
    """A parsed program: the node tree, its statistics and its distance shape.

    :ivar root: the ROOT node.
    :ivar n_blocks: every real block (top-level or nested).
    :ivar n_stacks: the top-level blocks.
    :ivar label_tree_size: every node: ROOT + blocks + connectors.
    :ivar shape: the compact arrays :func:`tree_edit.distance` works on.
    """

    __slots__ = ("root", "n_blocks", "n_stacks", "label_tree_size", "shape")

    def __init__(self, root: Node) -> None:
        if root.kind is not NodeKind.ROOT:
            raise ValueError("a program tree must start at a ROOT node")
        self.root = root
        self.n_stacks = sum(1 for c in root.children if c.kind is NodeKind.BLOCK)
        self.n_blocks, self.label_tree_size = _count(root)
        self.shape: Shape = build_shape(root, is_connector=_is_connector)

    @property
    def digest(self) -> str:
        """Content hash of the program as the distance sees it (hex)."""
        return self.shape.digest

    def same_program(self, other: Tree) -> bool:
        """True exactly when the distance between the two programs is 0."""
        return self.shape.same_as(other.shape)

    def outline(self) -> str:
        """The tree as nested text, e.g. ``ROOT(a(next(b)))`` (for tests and logs)."""
        out: list[str] = []
        stack: list[Node | str] = [self.root]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                out.append(item)
                continue
            out.append(item.label)
            if item.children:
                out.append("(")
                stack.append(")")
                for i, child in enumerate(reversed(item.children)):
                    stack.append(child)
                    if i < len(item.children) - 1:
                        stack.append(", ")
        return "".join(out)

    def __repr__(self) -> str:
        return f"Tree(n_blocks={self.n_blocks}, n_stacks={self.n_stacks}, label_tree_size={self.label_tree_size})"


def _is_connector(node: Node) -> bool:
    return node.kind is NodeKind.CONNECTOR


def _count(root: Node) -> tuple[int, int]:
    """(blocks, all nodes) under and including ``root``, without recursion."""
    blocks = nodes = 0
    stack = [root]
    while stack:
        node = stack.pop()
        nodes += 1
        blocks += node.kind is NodeKind.BLOCK
        stack.extend(node.children)
    return blocks, nodes


def empty_tree() -> Tree:
    """The empty program: a bare ROOT."""
    return Tree(Node(NodeKind.ROOT, ROOT_LABEL, ROOT_KEY))
