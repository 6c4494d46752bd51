"""Exact, fast tree edit distance between Blockly programs.

Pure: standard library, the ``apted`` reference and an optional C kernel;
no Kafka, web, database or model code.

Typical use::

    from tree_edit import DistanceCalculator, extract_program

    calc = DistanceCalculator(cache_size=4096, max_blocks=2000)
    prev, cur = extract_program(project_1), extract_program(project_2)
    d = calc.between_programs(prev, cur)       # raises NotComparable past the guards
    d = calc.between_xml(xml_a, xml_b)         # raises WorkspaceError on bad XML
"""

from tree_edit.calculator import DistanceCalculator, DistanceStats
from tree_edit.distance import BACKEND, distance
from tree_edit.errors import (
    NotComparable,
    NotComparableReason,
    TreeEditError,
    UnusableReason,
    WorkspaceError,
)
from tree_edit.parse import parse_workspace
from tree_edit.runs import RunStep, run_steps
from tree_edit.tree import Node, NodeKind, Tree
from tree_edit.workspace import (
    Program,
    Unusable,
    WorkspaceStatus,
    extract_program,
    workspace_xml,
)

__all__ = [
    "BACKEND",
    "DistanceCalculator",
    "DistanceStats",
    "Node",
    "NodeKind",
    "NotComparable",
    "NotComparableReason",
    "Program",
    "RunStep",
    "Tree",
    "TreeEditError",
    "Unusable",
    "UnusableReason",
    "WorkspaceError",
    "WorkspaceStatus",
    "distance",
    "extract_program",
    "parse_workspace",
    "run_steps",
    "workspace_xml",
]
