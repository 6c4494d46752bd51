"""``vexnudge sanitize``: JSON lines in, cleaned JSON lines out, in order."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from vexnudge.cli import main
from vexnudge.cli.sanitize import line_answer

CORPUS = Path(__file__).resolve().parents[2] / "data" / "sanitizer_corpus.jsonl"


@pytest.mark.parametrize(
    ("raw", "answer"),
    [
        (b'{"text": "Hint: Try a turn."}\n', {"text": "Try a turn."}),
        (b'{"text": ""}', {"text": ""}),
        (b"\n", {"error": "empty_line"}),
        (b"   ", {"error": "empty_line"}),
        (b"\xff\xfe", {"error": "invalid_utf8"}),
        (b"{nope", {"error": "invalid_json"}),
        (b"[1, 2]", {"error": "not_an_object"}),
        (b'{"txt": "x"}', {"error": "missing_text"}),
        (b'{"text": null}', {"error": "missing_text"}),
        (b'{"text": 5}', {"error": "text_not_string"}),
    ],
)
def test_line_answer(raw: bytes, answer: dict[str, str]) -> None:
    assert line_answer(raw) == answer


def test_file_to_out_file_in_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(b'{"text": "Student: Encouragement: Keep going."}\nnot json\n\n{"text": "One. Two. Three."}\n')
    out = tmp_path / "out.jsonl"
    assert main(["sanitize", str(source), "--out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines == [{"text": "Keep going."}, {"error": "invalid_json"}, {"error": "empty_line"}, {"text": "One. Two."}]
    assert "lines: 4  cleaned: 2  changed: 2  emptied: 0  errors: 2" in capsys.readouterr().err


def test_no_trim_keeps_every_sentence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "One. Two. Three."}\n')
    assert main(["sanitize", str(source), "--no-trim"]) == 0
    assert capsys.readouterr().out == '{"text": "One. Two. Three."}\n'


def test_stdin_and_the_whole_corpus(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    data = "".join(json.dumps({"text": c["raw"]}) + "\n" for c in cases).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    assert main(["sanitize", "-"]) == 0
    captured = capsys.readouterr()
    got = [json.loads(line)["text"] for line in captured.out.splitlines()]
    assert got == [c["expected"] for c in cases]
    assert f"lines: {len(cases)}" in captured.err and "errors: 0" in captured.err


def test_missing_input_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sanitize", str(tmp_path / "absent.jsonl")]) == 2
    assert "vexnudge sanitize:" in capsys.readouterr().err
