"""Blockly workspace XML to a labelled ordered :class:`~tree_edit.tree.Tree`.

Rules (the fixtures' normative edit-distance section):

* namespaces are ignored (local element names are compared);
* ROOT's children are the ``<block>`` elements directly under the document
  element, whatever that element is called; everything else at top level
  (``<variables>``, ``<comment>``, top-level ``<shadow>``) is ignored;
* a block's label is its ``type`` (``unknown`` if absent), its own fields
  (direct ``<field>`` children with a non-empty ``name``; text stripped; the
  last of a repeated name wins) and its shadow entries (``N.F=v``, nested
  ``N.M.F=v``) from value inputs that hold no real block;
* each real block inside a ``<value>``, ``<statement>`` or ``<next>`` becomes a
  child through a connector node ``value:N`` / ``statement:N`` / ``next``;
  children are ordered values, then statements, then next (document order
  within each group);
* ids, positions, mutations, comments and other attributes are ignored.

Empty or blank input is the empty program; anything that is not well-formed
XML, or that declares a document type or entities (never expanded, see
:mod:`tree_edit.xmlsafe`), raises :class:`~tree_edit.errors.WorkspaceError`
(reason ``xml_error``).
Parsing never recurses, so deeply nested programs are safe.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator

from tree_edit.errors import UnusableReason, WorkspaceError
from tree_edit.tree import ROOT_KEY, ROOT_LABEL, Node, NodeKind, Tree, empty_tree
from tree_edit.xmlsafe import XmlRefused, parse_xml

_INPUT_ORDER = {"value": 0, "statement": 1, "next": 2}

# Separators of the injective node keys.  XML 1.0 forbids these characters
# (even as character references), so no label text can contain them.
_PART, _ITEM, _PAIR = "\x00", "\x01", "\x02"


def parse_workspace(xml: str) -> Tree:
    """Parse a workspace into a program tree.

    :param xml: the Blockly XML of the whole workspace (``""`` = empty program).
    :returns: the program's tree.
    :raises WorkspaceError: ``xml`` is not well-formed XML.
    """
    if not xml.strip():
        return empty_tree()
    try:
        document = parse_xml(xml)
    except (XmlRefused, ET.ParseError) as exc:
        raise WorkspaceError(UnusableReason.XML_ERROR, str(exc)) from None
    except UnicodeEncodeError as exc:  # lone surrogates, e.g. from a JSON "\ud800"
        raise WorkspaceError(UnusableReason.XML_ERROR, f"invalid character: {exc}") from None
    return _build(document)


class _LocalNames(dict[str, str]):
    """Element name without its namespace, memoised for the length of one parse."""

    def __missing__(self, tag: str) -> str:
        name = self[tag] = tag.rpartition("}")[2]
        return name


def _build(document: ET.Element) -> Tree:
    """Turn the parsed document into nodes, children before parents."""
    # specs[i] = (label, key, [(connector label, spec index of the plugged block)])
    specs: list[tuple[str, str, list[tuple[str, int]]]] = []
    stacks: list[int] = []
    local = _LocalNames()
    todo = [(el, -1, "") for el in reversed(document) if local[el.tag] == "block"]
    while todo:
        element, parent, connector = todo.pop()
        index = len(specs)
        label, key, inputs = _read_block(element, local)
        specs.append((label, key, []))
        if parent < 0:
            stacks.append(index)
        else:
            specs[parent][2].append((connector, index))
        todo.extend((child, index, name) for name, child in reversed(inputs))
    nodes: list[Node] = [None] * len(specs)  # type: ignore[list-item]
    for index in range(len(specs) - 1, -1, -1):
        label, key, plugged = specs[index]
        children = tuple(Node(NodeKind.CONNECTOR, name, "C" + name, (nodes[child],)) for name, child in plugged)
        nodes[index] = Node(NodeKind.BLOCK, label, key, children)
    root = Node(NodeKind.ROOT, ROOT_LABEL, ROOT_KEY, tuple(nodes[i] for i in stacks))
    return Tree(root)


def _read_block(block: ET.Element, local: _LocalNames) -> tuple[str, str, list[tuple[str, ET.Element]]]:
    """A block's label, key and plugged blocks ``(connector label, element)``."""
    fields: dict[str, str] = {}
    shadows: dict[str, str] = {}
    groups: tuple[list[tuple[str, ET.Element]], ...] = ([], [], [])
    for child in block:
        tag = local[child.tag]
        if tag == "field":
            name = child.get("name")
            if name:
                fields[name] = (child.text or "").strip()
        elif tag in _INPUT_ORDER:
            name = child.get("name", "")
            plugged = [el for el in child if local[el.tag] == "block"]
            if plugged:
                connector = "next" if tag == "next" else f"{tag}:{name}"
                groups[_INPUT_ORDER[tag]].extend((connector, el) for el in plugged)
            elif tag == "value":
                _add_shadow_entries(child, name, local, shadows)
    kind = block.get("type", "unknown")
    own = sorted(fields.items())
    shown = sorted(shadows.items())
    label = "|".join([kind, *(f"{k}={v}" for k, v in own), *(f"{k}={v}" for k, v in shown)])
    key = _PART.join(
        ("B" + kind, _ITEM.join(k + _PAIR + v for k, v in own), _ITEM.join(k + _PAIR + v for k, v in shown))
    )
    return label, key, groups[0] + groups[1] + groups[2]


def _add_shadow_entries(value: ET.Element, prefix: str, local: _LocalNames, out: dict[str, str]) -> None:
    """Add the entries of the shadows directly inside ``value`` to ``out``.

    The common one-level case is handled here; nested shadow values go through
    :func:`_shadow_entries`, which keeps the same document order.
    """
    for shadow in value:
        if local[shadow.tag] != "shadow":
            continue
        for item in shadow:
            tag = local[item.tag]
            if tag == "field":
                name = item.get("name")
                if name:
                    out[f"{prefix}.{name}"] = (item.text or "").strip()
            elif tag == "value":
                out.update(_shadow_entries(item, f"{prefix}.{item.get('name') or ''}", local))


def _shadow_entries(value: ET.Element, prefix: str, local: _LocalNames) -> Iterator[tuple[str, str]]:
    """``(key, text)`` of the shadows directly inside ``value``, in document order.

    A shadow's field ``F`` gives ``prefix.F``; a shadow's ``<value name=M>`` is
    searched the same way with prefix ``prefix.M``.
    """
    stack: list[tuple[Iterator[ET.Element], str]] = [(_shadows(value, local), prefix)]
    while stack:
        shadows, path = stack[-1]
        item = next(shadows, None)
        if item is None:
            stack.pop()
            continue
        tag, name = local[item.tag], item.get("name")
        if tag == "field" and name:
            yield f"{path}.{name}", (item.text or "").strip()
        elif tag == "value":
            stack.append((_shadows(item, local), f"{path}.{name or ''}"))


def _shadows(value: ET.Element, local: _LocalNames) -> Iterator[ET.Element]:
    """The direct children of every ``<shadow>`` directly inside ``value``."""
    for shadow in value:
        if local[shadow.tag] == "shadow":
            yield from shadow
