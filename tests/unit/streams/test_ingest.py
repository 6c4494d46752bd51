"""Decoding and validation of raw telemetry lines against the malformed
sample's planted defects and every golden input report."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import orjson
import pytest

from streams.dedupe import Verdict, check, duplicate_of, remember, window_of
from streams.ingest import Rejected, SeenIds, decode_line, is_blank, read_workspace, routing_key
from tests.datafiles import MALFORMED_DEFECTS, SAMPLE_MALFORMED, all_logs, golden_for
from topology.schemas import NormalizedEvent


def run_file(path: Path) -> tuple[dict[int, NormalizedEvent | Rejected], int]:
    """Decode a whole file the way the ingest agent does (per-student dedupe)."""
    seen: dict[str, SeenIds] = {}
    results: dict[int, NormalizedEvent | Rejected] = {}
    blank = 0
    for number, line in enumerate(path.read_bytes().split(b"\n")[:-1], start=1):
        if is_blank(line):
            blank += 1
            continue
        out = decode_line(line)
        student = window_of(out)
        ids = None if student is None else seen.setdefault(student, SeenIds())
        if check(out, ids) is Verdict.DUPLICATE:
            out = duplicate_of(out)
        elif isinstance(out, NormalizedEvent) and ids is not None:
            remember(ids, out)
        results[number] = out
    return results, blank


def test_every_planted_defect_gets_its_exact_reason() -> None:
    results, blank = run_file(SAMPLE_MALFORMED)
    defects = json.loads(MALFORMED_DEFECTS.read_text())["defects"]
    rejected_lines = {d["line"]: d["reject_reason"] for d in defects if d["expect"] == "reject"}
    got = {n: r.reason.value for n, r in results.items() if isinstance(r, Rejected)}
    assert got == rejected_lines
    assert blank == sum(1 for d in defects if d["expect"].startswith("skip"))
    assert sum(isinstance(r, NormalizedEvent) for r in results.values()) == 507


@pytest.mark.parametrize("log", all_logs(), ids=lambda p: p.stem)
def test_input_report_matches_golden(log: Path) -> None:
    report = golden_for(log)["input_report"]
    results, blank = run_file(log)
    rejected = Counter(r.reason.value for r in results.values() if isinstance(r, Rejected))
    assert blank == report["blank_lines"]
    assert len(results) + blank == report["lines"]
    assert sum(isinstance(r, NormalizedEvent) for r in results.values()) == report["accepted"]
    assert dict(rejected) == report["rejected"]


def test_unusable_workspaces_are_flagged_not_rejected() -> None:
    results, _ = run_file(SAMPLE_MALFORMED)
    defects = json.loads(MALFORMED_DEFECTS.read_text())["defects"]
    for d in defects:
        if "unscored_runs" in d["expect"]:
            event = results[d["line"]]
            assert isinstance(event, NormalizedEvent)
            assert event.event_type == "runProject"
    statuses = Counter(e.workspace_status for e in results.values() if isinstance(e, NormalizedEvent))
    assert statuses["project_not_json"] == 1


@pytest.mark.parametrize(
    ("project", "status"),
    [
        (None, "no_project"),
        ("<xml></xml>", "ok"),
        ("  \n<xml/>", "ok"),
        ("", "project_not_json"),
        ("{bad", "project_not_json"),
        ("[1, 2]", "project_not_object"),
        ("3", "project_not_object"),
        (7, "project_not_object"),
        ([], "project_not_object"),
        (True, "project_not_object"),
        ("{}", "empty_workspace"),
        ('{"workspace": null}', "empty_workspace"),
        ('{"workspace": "  "}', "empty_workspace"),
        ({"workspace": ""}, "empty_workspace"),
        ('{"workspace": 5}', "workspace_not_string"),
        ({"workspace": "<xml/>"}, "ok"),
    ],
)
def test_workspace_reading_table(project: object, status: str) -> None:
    assert read_workspace(project)[0] == status


@pytest.mark.parametrize(
    "text",
    [
        '{"workspace": "<xml/>"}',
        '{"workspace": "<x>\\ud800</x>"}',  # a lone surrogate: orjson refuses it, json reads it
        '{"workspace": "<xml/>", "speed": NaN}',
        '{"workspace": 123456789012345678901234567890}',  # orjson would read a float
        '{"workspace": "a", "workspace": "<b/>"}',
        '{"workspace": null}',
        '{"workspace": "  "}',
        '{"workspace": "<xml/>"} trailing',
        "[1, 2",
        '"\\u0000"',
    ],
)
def test_a_project_string_reads_as_json_alone_reads_it(text: str) -> None:
    try:
        value = json.loads(text)
    except ValueError:
        expected: tuple[str, str | None] = ("project_not_json", None)
    else:
        expected = ("project_not_object", None) if isinstance(value, str) else read_workspace(value)
    assert read_workspace(text) == expected


def _line(**payload: object) -> bytes:
    base = {"studentID": " Otter12 ", "sessionID": "s1", "timestamp": "2026-05-06T09:14:07Z", "eventType": "runProject"}
    base.update(payload)
    return json.dumps({"id": 5, "raw_message": json.dumps(base)}).encode()


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"{not json", "invalid_json"),
        (b"[1,2]", "not_an_object"),
        (b'"text"', "not_an_object"),
        (b'{"id": 1, "raw_message": "{oops"}', "invalid_raw_message"),
        (b'{"id": 1, "raw_message": "[1]"}', "invalid_raw_message"),
        (b'{"id": 1, "raw_message": 12}', "invalid_raw_message"),
        (_line(studentID="  "), "missing_studentID"),
        (_line(studentID=None), "missing_studentID"),
        (_line(studentID=42), "missing_studentID"),
        (_line(sessionID=None, timestamp=None), "missing_sessionID"),
        (_line(timestamp=""), "missing_timestamp"),
        (_line(eventType=None), "missing_eventType"),
        (_line(timestamp="yesterday at 3pm"), "bad_timestamp"),
        (_line(timestamp="2026-05-06"), "bad_timestamp"),
    ],
)
def test_rejection_reasons_in_order(line: bytes, reason: str) -> None:
    out = decode_line(line)
    assert isinstance(out, Rejected)
    assert out.reason.value == reason


def test_payload_falls_back_to_content_then_envelope() -> None:
    body = {"studentID": "A", "sessionID": "s", "timestamp": "2026-05-06T09:14:07", "eventType": "x"}
    from_content = decode_line(json.dumps({"id": "k1", "content": body}).encode())
    itself = decode_line(json.dumps({"id": True, "raw_message": None, **body}).encode())
    assert isinstance(from_content, NormalizedEvent) and from_content.event_id == "s:k1"
    assert isinstance(itself, NormalizedEvent) and itself.event_id.startswith("h:")
    assert itself.ts == from_content.ts == 1778058847.0  # no offset means UTC


def test_normalized_event_canonicalizes_identity() -> None:
    out = decode_line(_line(playground="RoverRescue", playgroundData='{"parameters": {"a": 1}}'))
    assert isinstance(out, NormalizedEvent)
    assert (out.student_key, out.student_id, out.event_id) == ("otter12", "Otter12", "5")
    assert out.playground == "RoverRescue" and out.playground_params == {"a": 1}
    assert out.timestamp == "2026-05-06T09:14:07Z"
    assert routing_key(_line()) == "otter12"
    assert routing_key(b"{oops") is None


def test_seen_ids_are_bounded_oldest_first() -> None:
    ids = SeenIds(limit=2)
    for eid in ("1", "2", "3"):
        ids.add(eid)
    assert not ids.seen("1") and ids.seen("2") and ids.seen("3")
    assert SeenIds(ids.to_list()).to_list() == ["2", "3"]


def test_seen_ids_keep_offsets_and_order_through_their_stored_form() -> None:
    ids = SeenIds(limit=3)
    for offset, eid in enumerate(("7", "8", "9", "10")):
        ids.add(eid, offset)
    stored = SeenIds(orjson.loads(ids.to_bytes()), limit=3)
    assert stored.to_list() == ["8", "9", "10"]
    assert stored.to_json() == {"8": 1, "9": 2, "10": 3} == ids.to_json()
    assert stored.accepted_at("9") == 2 and stored.accepted_at("7") is None


def test_every_accepted_fixture_line_fits_the_documented_raw_schema() -> None:
    from topology.schemas import RawEnvelope, RawPayload

    for path in all_logs():
        results, _ = run_file(path)
        lines = path.read_bytes().split(b"\n")
        for number, out in results.items():
            if isinstance(out, NormalizedEvent):
                envelope = RawEnvelope.model_validate_json(lines[number - 1])
                raw = envelope.raw_message
                payload = (
                    RawPayload.model_validate_json(raw)
                    if isinstance(raw, str)
                    else RawPayload.model_validate(raw or envelope.model_dump())
                )
                assert payload.eventType == out.event_type
