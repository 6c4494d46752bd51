"""``vexnudge distance``: two files, a pairs file, errors and limits."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from vexnudge.cli import main

A = "<xml><block type='a'/></xml>"
B = "<xml><block type='b'><next><block type='c'/></next></block></xml>"


def _files(tmp_path: Path, **texts: str) -> dict[str, str]:
    paths = {}
    for name, text in texts.items():
        path = tmp_path / f"{name}.xml"
        path.write_text(text, encoding="utf-8")
        paths[name] = str(path)
    return paths


def test_two_files_print_the_distance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = _files(tmp_path, a=A, b=B)
    assert main(["distance", files["a"], files["b"]]) == 0
    assert capsys.readouterr().out == "2\n"


def test_stdin_as_one_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(B))
    assert main(["distance", _files(tmp_path, a=A)["a"], "-"]) == 0
    assert capsys.readouterr().out == "2\n"


def test_bad_workspace_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = _files(tmp_path, a=A, bad="<xml><block")
    assert main(["distance", files["a"], files["bad"]]) == 1
    err = capsys.readouterr().err
    assert files["bad"] in err and "xml_error" in err


def test_not_comparable_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TREE_EDIT_MAX_BLOCKS", "1")
    files = _files(tmp_path, a=A, b=B)
    assert main(["distance", files["a"], files["b"]]) == 1
    assert "too_many_blocks" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv", [["distance"], ["distance", "x.xml"], ["distance", "a", "b", "c"], ["distance", "a", "--pairs", "p"]]
)
def test_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "two workspace files or --pairs" in capsys.readouterr().err


def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["distance", str(tmp_path / "nope.xml"), str(tmp_path / "nope.xml")]) == 2
    assert "nope.xml" in capsys.readouterr().err


def test_pairs_file_answers_every_line_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TREE_EDIT_MAX_BLOCKS", "2")
    big = "<xml>" + "<block type='x'/>" * 3 + "</xml>"
    lines = [
        json.dumps({"a": A, "b": B}),
        "",
        "not json",
        "[1, 2]",
        json.dumps({"a": A}),
        json.dumps({"a": A, "b": 7}),
        json.dumps({"a": A, "b": "<xml"}),
        json.dumps({"a": "", "b": A}),
        json.dumps({"a": B, "b": A}),
        json.dumps({"a": A, "b": A}),
        json.dumps({"a": A, "b": big}),
    ]
    data = ("\n".join(lines) + "\n").encode() + b"\xff\n"
    path = tmp_path / "pairs.jsonl"
    path.write_bytes(data)
    assert main(["distance", "--pairs", str(path)]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line) for line in captured.out.splitlines()] == [
        {"distance": 2},
        {"error": "empty_line"},
        {"error": "invalid_json"},
        {"error": "not_an_object"},
        {"error": "missing_b"},
        {"error": "b_not_string"},
        {"error": "xml_error"},
        {"distance": 1},
        {"distance": 2},
        {"distance": 0},
        {"error": "too_many_blocks"},
        {"error": "invalid_utf8"},
    ]
    assert "pairs: 12  errors: 8  total:" in captured.err
    assert "median:" in captured.err and "cached 1" in captured.err


def test_pairs_from_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(json.dumps({"a": A, "b": B}).encode()))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["distance", "--pairs", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.out == '{"distance": 2}\n'
    assert "pairs: 1  errors: 0" in captured.err


def test_empty_pairs_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert main(["distance", "--pairs", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "pairs: 0  errors: 0" in captured.err
