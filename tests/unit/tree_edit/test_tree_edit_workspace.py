"""Run ``project`` values to programs or unusable reasons; stretch bookkeeping."""

from __future__ import annotations

import json

import pytest

from tree_edit import (
    Program,
    Unusable,
    UnusableReason,
    WorkspaceStatus,
    extract_program,
    run_steps,
    workspace_xml,
)

XML = "<xml xmlns='https://developers.google.com/blockly/xml'><block type='a'/></xml>"


@pytest.mark.parametrize(
    ("project", "reason"),
    [
        (None, UnusableReason.NO_PROJECT),
        ("", UnusableReason.PROJECT_NOT_JSON),
        ("{not json", UnusableReason.PROJECT_NOT_JSON),
        ("  \n", UnusableReason.PROJECT_NOT_JSON),
        ("[" * 100_000, UnusableReason.PROJECT_NOT_JSON),
        ("[1, 2]", UnusableReason.PROJECT_NOT_OBJECT),
        ('"just a string"', UnusableReason.PROJECT_NOT_OBJECT),
        ("5", UnusableReason.PROJECT_NOT_OBJECT),
        ("null", UnusableReason.PROJECT_NOT_OBJECT),
        (5, UnusableReason.PROJECT_NOT_OBJECT),
        ([XML], UnusableReason.PROJECT_NOT_OBJECT),
        (True, UnusableReason.PROJECT_NOT_OBJECT),
        (json.dumps({"workspace": 5}), UnusableReason.WORKSPACE_NOT_STRING),
        ({"workspace": ["<xml/>"]}, UnusableReason.WORKSPACE_NOT_STRING),
        (json.dumps({"workspace": "<xml><block>"}), UnusableReason.XML_ERROR),
        ("<xml><block></xml>", UnusableReason.XML_ERROR),
        (json.dumps({"workspace": "<xml><block type='\ud800'/></xml>"}), UnusableReason.XML_ERROR),
    ],
)
def test_unusable_projects(project: object, reason: UnusableReason) -> None:
    outcome = extract_program(project)
    assert isinstance(outcome, Unusable)
    assert outcome.reason is reason


@pytest.mark.parametrize(
    "project",
    [
        json.dumps({"workspace": None}),
        json.dumps({"mode": "Blocks"}),
        json.dumps({"workspace": ""}),
        json.dumps({"workspace": " \n "}),
        {"workspace": None},
        {},
    ],
)
def test_missing_or_blank_workspace_is_the_empty_program(project: object) -> None:
    outcome = extract_program(project)
    assert isinstance(outcome, Program)
    assert outcome.status is WorkspaceStatus.EMPTY
    assert outcome.tree.n_blocks == 0


@pytest.mark.parametrize(
    "project",
    [
        json.dumps({"workspace": XML}),
        {"workspace": XML},
        XML,
        "  \n" + XML,
    ],
)
def test_usable_projects(project: object) -> None:
    outcome = extract_program(project)
    assert isinstance(outcome, Program)
    assert outcome.status is WorkspaceStatus.OK
    assert outcome.tree.n_blocks == 1
    assert outcome.xml.strip() == XML


def test_a_document_without_blocks_is_ok_not_empty() -> None:
    outcome = extract_program(json.dumps({"workspace": "<xml/>"}))
    assert isinstance(outcome, Program)
    assert (outcome.status, outcome.tree.n_blocks) == (WorkspaceStatus.OK, 0)


def test_workspace_xml_does_not_parse() -> None:
    assert workspace_xml({"workspace": "<broken"}) == ("<broken", WorkspaceStatus.OK)
    assert workspace_xml({"workspace": None}) == ("", WorkspaceStatus.EMPTY)


def test_identical_xml_reuses_the_previous_program() -> None:
    first = extract_program({"workspace": XML})
    assert isinstance(first, Program)
    assert extract_program(json.dumps({"workspace": XML}), previous=first) is first
    other = extract_program({"workspace": XML.replace("'a'", "'b'")}, previous=first)
    assert isinstance(other, Program) and other is not first


def _program(block: str) -> Program:
    outcome = extract_program({"workspace": f"<xml><block type='{block}'/></xml>"})
    assert isinstance(outcome, Program)
    return outcome


def test_run_steps_stretches_inheritance_and_unusable_runs() -> None:
    a, b, c, d, e = (_program(x) for x in "abcde")
    bad = Unusable(UnusableReason.XML_ERROR)
    steps = list(
        run_steps(
            [
                (None, a),  # 0: first run, playground stays None
                ("GOMars", b),  # 1: new stretch
                ("GOMars", bad),  # unusable: no index, no boundary
                (None, c),  # 2: inherits GOMars, diffs against b
                ("WallMaze", d),  # 3: new stretch
                ("GOMars", e),  # 4: back to GOMars: a new stretch again
                ("GOMars", a),  # 5: diffs against e
            ]
        )
    )
    assert [(s.index, s.playground, s.program, s.previous) for s in steps] == [
        (0, None, a, None),
        (1, "GOMars", b, None),
        (2, "GOMars", c, b),
        (3, "WallMaze", d, None),
        (4, "GOMars", e, None),
        (5, "GOMars", a, e),
    ]


def test_run_steps_of_only_unusable_runs_is_empty() -> None:
    assert list(run_steps([("GOMars", Unusable(UnusableReason.NO_PROJECT))])) == []
