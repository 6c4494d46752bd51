"""Hostile telemetry lines through the pure cores: each gets its outcome, and a
classroom with them mixed in gives every honest student exactly the golden output."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest

from streams.config import EngineConfig
from streams.dedupe import Verdict, check, duplicate_of
from streams.ingest import NormalizedEvent, Rejected, SeenIds, decode_line
from streams.local import analyze_lines, read_lines
from streams.scoring import TreeEditScorer
from streams.screen import FIELD_MAX_CHARS, Limits
from streams.summary import build_summary
from tests.datafiles import SAMPLE_CLASSROOM, golden_for
from tests.hostile.lines import HOSTILE_PREFIX, catalogue, deep_program, entity_bomb, envelope, mixed_in, workspace

LIMITS = Limits()  # the defaults: the entity bomb line (~0.98 MB) is under them
TS = "2026-05-06T09:14:07Z"


def outcome(line: bytes, seen: SeenIds | None = None) -> str | None:
    out = decode_line(line, limits=LIMITS)
    if isinstance(out, Rejected):
        return (duplicate_of(out) if check(out, seen) is Verdict.DUPLICATE else out).reason.value
    return None


@pytest.mark.parametrize("case", catalogue(TS, "alice", "s1", 7, 0, 1_100_000), ids=lambda h: h.name)
def test_each_hostile_line_has_its_outcome(case) -> None:  # type: ignore[no-untyped-def]
    seen = SeenIds()
    seen.add("7")
    assert outcome(case.line, seen) == case.reason


def test_screen_ranks_after_duplicates_and_in_rule_order() -> None:
    seen = SeenIds()
    seen.add("5")
    both = envelope(5, "alice", "s\x00", TS, filler="x" * 1_100_000)  # duplicate, too large and a bad field
    assert outcome(both, seen) == "duplicate_id"
    assert outcome(both) == "too_large"  # too_large is checked before bad_field
    skewed_and_bad = envelope(6, "alice", "s\x00", "2099-01-01T00:00:00Z", received_at=TS)
    assert outcome(skewed_and_bad) == "bad_field"


def test_field_limits_are_on_the_trimmed_length() -> None:
    assert outcome(envelope(1, "a" * FIELD_MAX_CHARS, "s", TS)) is None
    assert outcome(envelope(1, " " + "a" * FIELD_MAX_CHARS + " ", "s", TS)) is None
    assert outcome(envelope(1, "a" * (FIELD_MAX_CHARS + 1), "s", TS)) == "bad_field"
    assert outcome(envelope(1, "tab\there", "s", TS)) == "bad_field"
    assert outcome(envelope(1, "del\x7f", "s", TS)) == "bad_field"
    assert outcome(envelope(1, "ünïcödé ✓", "s", TS)) is None


def test_clock_skew_against_received_at_then_the_live_clock() -> None:
    late = envelope(1, "a", "s", "2026-05-06T09:19:08Z", received_at=TS)  # 301 s after
    edge = envelope(1, "a", "s", "2026-05-06T09:19:07Z", received_at=TS)  # exactly 300 s
    assert outcome(late) == "future_timestamp" and outcome(edge) is None
    bare = envelope(1, "a", "s", "2026-05-06T09:19:08Z")
    received = 1778058847.0  # 2026-05-06T09:14:07Z
    assert isinstance(decode_line(bare, limits=LIMITS, now=None), NormalizedEvent)  # a replay accepts it
    out = decode_line(bare, limits=LIMITS, now=received)
    assert isinstance(out, Rejected) and out.reason.value == "future_timestamp"
    unreadable = envelope(1, "a", "s", "2026-05-06T09:19:08Z", received_at="not a time")
    assert isinstance(decode_line(unreadable, limits=LIMITS, now=None), NormalizedEvent)


def test_oversize_side_fields_are_bounded_not_rejected() -> None:
    line = envelope(
        1,
        "a",
        "s",
        TS,
        "blockChanged",
        playground="P" * 5000,
        classCode="C" * 300,
        errorMessage="E" * 10_000,
        playgroundData={"parameters": {"k": "v" * 10_000}},
        filler="x" * 20_000,
    )
    out = decode_line(line, limits=LIMITS)
    assert isinstance(out, NormalizedEvent)
    assert out.playground is not None and out.playground.startswith("~") and len(out.playground) == 33
    assert out.class_code is not None and len(out.class_code) == 33
    assert out.error_message is not None and len(out.error_message) == 1000 and out.error_message.endswith("…")
    assert out.playground_params is None
    again = decode_line(envelope(2, "a", "s", TS, playground="P" * 5000), limits=LIMITS)
    assert isinstance(again, NormalizedEvent) and again.playground == out.playground  # one stretch stays one


def test_entity_bomb_does_not_kill_the_process() -> None:
    """In a child process, as the crash it guards against is a SIGSEGV, not an exception."""
    code = (
        "from tree_edit import parse_workspace, WorkspaceError\n"
        "from feedback.render import render_program\n"
        "from tests.hostile.lines import entity_bomb\n"
        "x = entity_bomb()\n"
        "assert render_program(x) is None\n"
        "try:\n    parse_workspace(x)\nexcept WorkspaceError as e:\n    print(e.reason.value)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "xml_error"


def test_a_classroom_with_hostile_lines_mixed_in_keeps_every_honest_output() -> None:
    lines = read_lines(SAMPLE_CLASSROOM.read_bytes())
    mixed, inserted = mixed_in(lines, seed=7, large=1_100_000)
    config = EngineConfig(max_sessions=16)
    run = analyze_lines(mixed, config, TreeEditScorer(), limits=LIMITS)
    summary = build_summary(run.observed, input_name="x", input_sha256="x", input_report=run.report)
    golden = golden_for(SAMPLE_CLASSROOM)
    honest = [s for s in summary["sessions"] if not s["student_id"].startswith(HOSTILE_PREFIX)]
    assert [(s["student_id"], s["session_id"]) for s in honest] == [
        (s["student_id"], s["session_id"]) for s in golden["sessions"]
    ]
    for ours, theirs in zip(honest, golden["sessions"], strict=True):
        assert ours == theirs, ours["session_id"]
    expected = Counter(golden["input_report"]["rejected"])
    expected.update(h.reason for h in inserted if h.reason)
    assert Counter(run.report["rejected"]) == expected
    # the hostile students' accepted lines were analysed, their bad runs unscored
    hostile = [s for s in summary["sessions"] if s["student_id"].startswith(HOSTILE_PREFIX)]
    reasons = Counter(u["reason"] for s in hostile for u in s["unscored_runs"])
    assert reasons["xml_error"] == 3 * 3  # entity bomb, billion laughs, external entity, in 3 batches
    flood = [s for s in hostile if "flood" in s["student_id"]]
    assert flood  # the flood's sessions were seen (and its state stayed capped: see the engine test)


def test_deep_program_runs_are_scored() -> None:
    lines = [
        envelope(i, "deep", "s", TS, "runProject", project=workspace(deep_program(d)))
        for i, d in enumerate((500, 501, 900))
    ]
    run = analyze_lines(lines, EngineConfig(), TreeEditScorer(), limits=Limits(raw_max_bytes=10**7))
    assert [r.edit_distance for r in run.observed.runs] == [None, 1, 399]


def test_bomb_is_small_enough_to_reach_the_broker() -> None:
    """The entity bomb of the issue is under the default line limit: the worker must survive it."""
    assert len(entity_bomb()) < Limits().raw_max_bytes
