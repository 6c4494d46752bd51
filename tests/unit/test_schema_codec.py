"""The wire codec: ``encode`` writes exactly what pydantic's ``model_dump_json``
writes (it only skips the detour through ``str``), for every kind of record
the analysis publishes and for text that is not ASCII, and ``decode`` reads it
back to an equal record."""

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
    reader = LineAnalyzer(LocalAnalyzer(EngineConfig.from_settings(settings), TreeEditScorer(),
                                        NudgeConfig.from_settings(settings)))
    out: list[Record] = []
    for line in read_lines(SAMPLE_CLASSROOM.read_bytes())[:400]:
        event, outputs = reader.feed(line)
        out += ([event] if event is not None else []) + outputs
    out.append(DeadLetter(reason=RejectReason.INVALID_JSON, detail="ligne illisible — «¿?» 🤖", stage="ingest",
                          original="{\"studentID\": \"Zoë\"", source=SourceRef(topic="t", partition=0, offset=1),
                          dead_lettered_at=time.time()))
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
