"""From a run event's ``project`` value to a program, or the reason there is none.

A run's ``project`` is normally a JSON string whose object holds the Blockly
XML under ``workspace``; some producers send the bare XML instead.  The outcome
is a :class:`Program` (status ``ok`` or ``empty_workspace``) or an
:class:`Unusable` with one machine-readable reason:

=====================================================  =========================
``project``                                            outcome
=====================================================  =========================
absent / ``None``                                      ``no_project``
string starting with ``<`` (after blanks)              that string is the XML
other string that is not JSON (``""`` included)        ``project_not_json``
JSON that is not an object; number, list, boolean      ``project_not_object``
object, ``workspace`` absent/null/blank                empty program
object, ``workspace`` not a string                     ``workspace_not_string``
object, ``workspace`` not well-formed XML              ``xml_error``
=====================================================  =========================

Pure and deterministic; no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum

from tree_edit.errors import UnusableReason, WorkspaceError
from tree_edit.parse import parse_workspace
from tree_edit.tree import Tree


class WorkspaceStatus(StrEnum):
    """How a usable workspace was found."""

    OK = "ok"
    EMPTY = "empty_workspace"


@dataclass(frozen=True, slots=True)
class Program:
    """A usable run program.

    :ivar xml: the workspace XML as sent (``""`` when there was none).
    :ivar tree: the parsed program.
    :ivar status: ``ok``, or ``empty_workspace`` when the workspace was missing or blank.
    """

    xml: str
    tree: Tree
    status: WorkspaceStatus


@dataclass(frozen=True, slots=True)
class Unusable:
    """A run whose workspace cannot be used; it is left out of the run sequence."""

    reason: UnusableReason
    detail: str = ""


def workspace_xml(project: object) -> tuple[str, WorkspaceStatus] | Unusable:
    """The workspace XML held by a ``project`` value, without parsing it.

    :returns: ``(xml, status)``, or :class:`Unusable` for every reason but ``xml_error``.
    """
    if project is None:
        return Unusable(UnusableReason.NO_PROJECT)
    if isinstance(project, str):
        if project.lstrip().startswith("<"):
            return project, WorkspaceStatus.OK
        try:
            project = json.loads(project)
        except (ValueError, RecursionError) as exc:
            return Unusable(UnusableReason.PROJECT_NOT_JSON, str(exc)[:200])
    if not isinstance(project, dict):
        return Unusable(UnusableReason.PROJECT_NOT_OBJECT, type(project).__name__)
    xml = project.get("workspace")
    if xml is None or (isinstance(xml, str) and not xml.strip()):
        return xml or "", WorkspaceStatus.EMPTY
    if not isinstance(xml, str):
        return Unusable(UnusableReason.WORKSPACE_NOT_STRING, type(xml).__name__)
    return xml, WorkspaceStatus.OK


def extract_program(project: object, previous: Program | None = None) -> Program | Unusable:
    """The program of a run, or why it is unusable.

    :param project: the payload's ``project`` value (string, object or anything).
    :param previous: the previous program of the same stream; when its XML is
        byte-identical the tree is reused instead of parsed again.
    :returns: a :class:`Program` or an :class:`Unusable` with its reason.
    """
    found = workspace_xml(project)
    if isinstance(found, Unusable):
        return found
    xml, status = found
    if previous is not None and previous.xml == xml:
        return previous
    try:
        tree = parse_workspace(xml)
    except WorkspaceError as exc:
        return Unusable(exc.reason, exc.detail)
    return Program(xml, tree, status)
