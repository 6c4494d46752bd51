"""The wire codec: ``encode`` (orjson over a record's fields) writes exactly
what pydantic's ``model_dump_json`` writes, for every kind of record the
analysis publishes, for text that is not ASCII and for edge values, and
``decode`` reads it back to an equal record."""

from __future__ import annotations

import time

from feedback.nudge import NudgeConfig
from streams.config import EngineConfig
from streams.local import LineAnalyzer, LocalAnalyzer, read_lines
from streams.scoring import TreeEditScorer
from tests.datafiles import SAMPLE_CLASSROOM
from topology.schemas import DeadLetter, RejectReason, SourceRef, decode
from topology.schemas.base import Record, encode
from topology.settings import Settings


def _records() -> list[Record]:
    settings = Settings()
    reader = LineAnalyzer(
        LocalAnalyzer(EngineConfig.from_settings(settings), TreeEditScorer(), NudgeConfig.from_settings(settings))
    )
    out: list[Record] = []
    for line in read_lines(SAMPLE_CLASSROOM.read_bytes())[:400]:
        event, outputs = reader.feed(line)
        out += ([event] if event is not None else []) + outputs
    out.append(
        DeadLetter(
            reason=RejectReason.INVALID_JSON,
            detail="ligne illisible — «¿?» 🤖",
            stage="ingest",
            original='{"studentID": "Zoë"',
            source=SourceRef(topic="t", partition=0, offset=1),
            dead_lettered_at=time.time(),
        )
    )
    return out


def test_encode_writes_what_model_dump_json_writes_and_decodes_back() -> None:
    records = _records()
    kinds = {type(r).__name__ for r in records}
    assert {"NormalizedEvent", "RunScored", "TriggerFired", "EpisodeClosed", "DeadLetter"} <= kinds
    for record in records:
        data = encode(record)
        assert isinstance(data, bytes)
        assert data == record.model_dump_json(exclude_none=False).encode()
        assert decode(type(record), data) == record


def test_encode_matches_pydantic_on_edge_values() -> None:
    """Floats at the edges of their shortest form, control characters, non-BMP
    text, nested values and an integer beyond 64 bits (which orjson refuses and
    pydantic writes): the bytes stay pydantic's."""
    from topology.schemas import NormalizedEvent

    params = {
        "floats": [0.1, -0.0, 1e16, 1.5e-7, 123456789.125, 2.0**63, 1e300],
        "big": 2**64 + 1,
        "text": 'tab\tquote"back\\slash\u0001\u2028 ünï 🤖',
        "nested": {"a": [None, True, {"b": []}]},
    }
    base = dict(
        event_id="7",
        envelope_id_int=7,
        student_key="zoë",
        student_id="Zoë",
        session_id="s",
        event_type="blockMoved",
        ts=1_700_000_000.123456,
        timestamp="2023-11-14T22:13:20.123456Z",
        workspace_status="ok",
        workspace_xml='<xml a="1">\n<b>&amp;</b></xml>',
        source=SourceRef(topic="t", partition=3, offset=2**40, line=None),
    )
    for extra in (
        {"playground_params": params},
        {"block_event": {"x": 1.0}, "envelope_id_int": -(2**63)},
        {"envelope_id_int": 2**70},
        {"ts": 0.0, "error_message": ""},
    ):
        record = NormalizedEvent(**{**base, **extra})
        data = encode(record)
        assert data == record.model_dump_json(exclude_none=False).encode(), extra
        assert decode(NormalizedEvent, data) == record
