"""The current program as compact pseudo-code with ``[Active]`` / ``[Orphaned]`` sections.

Input is a Blockly workspace XML string; output is a short text the model
can read, or ``None`` when there is nothing to show (no XML, unparseable XML,
or no top-level block).  Rules:

* namespaces are ignored; top-level stacks keep their document order;
* a stack is **Active** when its root is an event hat (an explicit set: a
  detached ``broadcast`` is not a hat) that is not disabled, or when it is a
  procedure definition called from live code, directly or through other live
  definitions (the first definition of a name wins); every other top-level
  stack is **Orphaned**, i.e. code that never runs;
* calls inside a disabled block (its bodies and inputs) do not count, but
  the blocks after a disabled block still run; disabled blocks get a
  ``[disabled]`` suffix;
* one line per block: ``<indent><type> (K=V,...)``, where the type loses a
  ``pg_``/``aim_``/``mixed_`` prefix, ``K=V`` are the block's fields in XML
  order followed by the literals of its value inputs (``AMOUNT=600``) and
  ``PROC=<name>`` for procedure blocks;
* a stack root is at depth 1 and the rest of its chain at depth 2; input
  reporters and statement bodies sit one level deeper than their block and
  an ``else:`` line (at the block's depth) opens a second body;
* an empty section reads `` (empty)``;
* nesting deeper than :data:`MAX_DEPTH` is not shown: one line at that
  depth says how many blocks it hides (a program nested hundreds of blocks
  deep renders in bounded time and stack, and a model reads nothing useful
  past a few levels anyway).

Deterministic and pure.  The XML is read by :func:`tree_edit.xmlsafe.parse_xml`
(no document type, no entity expansion); no traversal here recurses deeper
than :data:`MAX_DEPTH`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field

from tree_edit.xmlsafe import XmlRefused, parse_xml

HAT_TYPES = frozenset(
    {
        "pg_events_when_started",
        "pg_events_when_broadcasted",
        "pg_events_when_bumper",
        "pg_events_when_timer",
        "pg_events_optical_detect_object",
    }
)
DEFINITION_TYPE = "procedures_definition"
CALL_TYPE = "procedures_call"
ELSE_BODY = "SUBSTACK2"
#: The deepest indentation rendered; deeper blocks are counted, not shown.
MAX_DEPTH = 40
_STRIP_PREFIXES = ("pg_", "aim_", "mixed_")


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _children(elem: ET.Element, name: str) -> Iterator[ET.Element]:
    return (child for child in elem if _local(child.tag) == name)


def _first(elem: ET.Element, name: str) -> ET.Element | None:
    return next(_children(elem, name), None)


def is_disabled(block: ET.Element) -> bool:
    """Whether a block is switched off in the editor."""
    flag = (block.get("disabled") or "").strip().lower()
    return flag in ("true", "1") or bool((block.get("disabled-reasons") or "").strip())


def proccode(block: ET.Element) -> str | None:
    """The procedure name of a definition or call block (``None`` if absent).

    A call carries it on its own ``<mutation>``; a definition carries it on
    its own mutation or on the prototype inside its inputs.
    """
    own = _first(block, "mutation")
    if own is not None and own.get("proccode"):
        return own.get("proccode")
    for value in _children(block, "value"):
        for node in value.iter():
            if _local(node.tag) == "mutation" and node.get("proccode"):
                return node.get("proccode")
    return None


def _next_block(block: ET.Element) -> ET.Element | None:
    nxt = _first(block, "next")
    return _first(nxt, "block") if nxt is not None else None


def chain(block: ET.Element | None) -> Iterator[ET.Element]:
    """A block and every block below it through ``<next>``."""
    while block is not None:
        yield block
        block = _next_block(block)


def _value_parts(value: ET.Element) -> tuple[ET.Element | None, ET.Element | None]:
    """The real block and the shadow plugged into a ``<value>`` input."""
    return _first(value, "block"), _first(value, "shadow")


def _calls(root: ET.Element) -> Iterator[str]:
    """Procedure names called by live code of the stack starting at ``root``
    (walked with an explicit stack: nesting depth costs no recursion)."""
    pending: list[ET.Element] = [root]
    while pending:
        found: list[ET.Element] = []
        for block in chain(pending.pop()):
            if is_disabled(block):
                continue
            if block.get("type") == CALL_TYPE:
                name = proccode(block)
                if name:
                    yield name
            for slot in block:
                kind = _local(slot.tag)
                inner = (
                    _first(slot, "block")
                    if kind == "statement"
                    else (_value_parts(slot)[0] if kind == "value" else None)
                )
                if inner is not None:
                    found.append(inner)
        pending.extend(reversed(found))


def _definitions(roots: list[ET.Element]) -> dict[str, int]:
    """Procedure name → index of its first defining stack."""
    out: dict[str, int] = {}
    for idx, root in enumerate(roots):
        if root.get("type") == DEFINITION_TYPE:
            name = proccode(root)
            if name and name not in out:
                out[name] = idx
    return out


def live_roots(roots: list[ET.Element]) -> set[int]:
    """Indices of the top-level stacks that run (hats plus called definitions)."""
    live = {i for i, r in enumerate(roots) if r.get("type") in HAT_TYPES and not is_disabled(r)}
    definitions = _definitions(roots)
    pending = list(live)
    while pending:
        for name in _calls(roots[pending.pop()]):
            target = definitions.get(name)
            if target is not None and target not in live and not is_disabled(roots[target]):
                live.add(target)
                pending.append(target)
    return live


def clean_type(block_type: str) -> str:
    """The block type without its editor prefix (``pg_``, ``aim_``, ``mixed_``)."""
    for prefix in _STRIP_PREFIXES:
        if block_type.startswith(prefix):
            return block_type[len(prefix) :]
    return block_type


def _literal(shadow: ET.Element) -> str | None:
    texts = [(f.text or "").strip() for f in _children(shadow, "field")]
    return " ".join(texts) if texts else None


@dataclass(slots=True)
class _Lines:
    out: list[str] = field(default_factory=list)

    def add(self, depth: int, text: str) -> None:
        self.out.append(" " * depth + text)


def block_line(block: ET.Element) -> str:
    """One block's line text (without indentation)."""
    parts = [f"{f.get('name', '')}={(f.text or '').strip()}" for f in _children(block, "field")]
    if block.get("type") in (DEFINITION_TYPE, CALL_TYPE):
        name = proccode(block)
        if name:
            parts.append(f"PROC={name}")
    for value in _children(block, "value"):
        real, shadow = _value_parts(value)
        literal = _literal(shadow) if shadow is not None else None
        if literal is not None and (real is None or is_disabled(real)):
            parts.append(f"{value.get('name', '')}={literal}")
    text = clean_type(block.get("type") or "?")
    if parts:
        text += " (" + ",".join(parts) + ")"
    if is_disabled(block):
        text += " [disabled]"
    return text


def _emit_block(block: ET.Element, depth: int, lines: _Lines) -> None:
    lines.add(depth, block_line(block))
    for value in _children(block, "value"):
        real, _ = _value_parts(value)
        if real is not None:
            _emit_chain(real, depth + 1, lines)
    for statement in _children(block, "statement"):
        body = _first(statement, "block")
        if statement.get("name") == ELSE_BODY:
            lines.add(depth, "else:")
        if body is not None:
            _emit_chain(body, depth + 1, lines)


def _emit_chain(block: ET.Element, depth: int, lines: _Lines) -> None:
    if depth > MAX_DEPTH:  # the chain's element holds everything below it
        hidden = sum(1 for node in block.iter() if _local(node.tag) == "block")
        lines.add(depth, f"... ({hidden} more nested block{'s' if hidden != 1 else ''} not shown)")
        return
    for member in chain(block):
        _emit_block(member, depth, lines)


def _emit_stack(root: ET.Element, lines: _Lines) -> None:
    _emit_block(root, 1, lines)
    below = _next_block(root)
    if below is not None:
        _emit_chain(below, 2, lines)


def top_level_blocks(xml: str | None) -> list[ET.Element] | None:
    """The workspace's top-level ``<block>`` elements; ``None`` if not parseable."""
    if not xml or not xml.strip():
        return None
    try:
        root = parse_xml(xml)
    except (ET.ParseError, XmlRefused, UnicodeEncodeError):
        return None
    if _local(root.tag) == "block":
        return [root]
    return list(_children(root, "block"))


def render_program(xml: str | None) -> str | None:
    """Render a workspace as ``[Active]`` / ``[Orphaned]`` pseudo-code.

    :param xml: Blockly workspace XML (namespaced or not).
    :returns: the rendering, or ``None`` for no XML, unparseable XML or a
        workspace without blocks.  Never raises on bad input.
    """
    roots = top_level_blocks(xml)
    if not roots:
        return None
    live = live_roots(roots)
    active, orphaned = _Lines(), _Lines()
    for idx, root in enumerate(roots):
        _emit_stack(root, active if idx in live else orphaned)
    sections = []
    for title, lines in (("[Active]", active), ("[Orphaned]", orphaned)):
        sections.append(title)
        sections.extend(lines.out or [" (empty)"])
    return "\n".join(sections)


def program_block_types(xml: str | None, *, active_only: bool = False) -> list[str]:
    """Block types of the program in rendering order (live stacks first).

    Shadows are skipped; a type appears once.  ``active_only`` keeps only the
    blocks of live stacks.
    """
    roots = top_level_blocks(xml)
    if not roots:
        return []
    live = live_roots(roots)
    order = [r for i, r in enumerate(roots) if i in live]
    if not active_only:
        order += [r for i, r in enumerate(roots) if i not in live]
    seen: dict[str, None] = {}
    for root in order:
        for node in root.iter():
            if _local(node.tag) == "block" and node.get("type"):
                seen.setdefault(node.get("type", ""), None)
    return list(seen)
