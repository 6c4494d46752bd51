"""A student's state stays bounded: sessions are capped by count and by size,
the least recently active dropped first (never the latest), each drop counted."""

from __future__ import annotations

from streams.config import EngineConfig
from streams.engine import StudentEngine
from streams.ingest import decode_line
from streams.programs import DictProgramStore
from streams.scoring import TreeEditScorer
from streams.state import StudentState
from tests.hostile.lines import envelope, workspace
from topology.schemas import NormalizedEvent


def event(n: int, session: str, second: int, event_type: str = "blockCreated", **payload: object) -> NormalizedEvent:
    out = decode_line(
        envelope(n, "flood", session, f"2026-05-06T09:{second // 60:02d}:{second % 60:02d}Z", event_type, **payload)
    )
    assert isinstance(out, NormalizedEvent)
    return out


def feed(config: EngineConfig, events: list[NormalizedEvent]) -> tuple[StudentState, list[str], DictProgramStore]:
    state, programs, dropped = StudentState("flood"), DictProgramStore(), []
    for e in events:
        engine = StudentEngine(state, config, TreeEditScorer(), programs)
        engine.on_event(e)
        dropped += engine.dropped
    return state, dropped, programs


def test_session_count_is_capped_oldest_first() -> None:
    config = EngineConfig(max_sessions=4)
    state, dropped, _ = feed(config, [event(i, f"s{i}", i) for i in range(10)])
    assert list(state.sessions) == ["s6", "s7", "s8", "s9"]
    assert dropped == ["session_cap"] * 6


def test_a_session_active_again_is_kept_over_older_ones() -> None:
    config = EngineConfig(max_sessions=3)
    events = [event(1, "a", 1), event(2, "b", 2), event(3, "c", 3), event(4, "a", 4), event(5, "d", 5)]
    state, dropped, _ = feed(config, events)
    assert sorted(state.sessions) == ["a", "c", "d"] and dropped == ["session_cap"]


def test_state_size_is_capped_and_programs_of_dropped_sessions_go_too() -> None:
    config = EngineConfig(max_sessions=1000, max_state_bytes=8192)
    runs = [event(i, f"session-{i}-" + "z" * 100, i, "runProject", project=workspace("<xml/>")) for i in range(40)]
    state, dropped, programs = feed(config, runs)
    assert len(state.to_bytes()) <= 8192
    assert dropped and set(dropped) == {"state_size"}
    assert len(state.sessions) == 40 - len(dropped)
    assert {sid for sid, _digest in programs.programs} == set(state.sessions)


def test_the_latest_session_is_never_dropped() -> None:
    config = EngineConfig(max_sessions=2)
    # the newest event belongs to an old session; a late event opens a new one
    state, _, _ = feed(config, [event(1, "a", 10), event(2, "b", 20), event(3, "late", 5)])
    assert state.last_session == "b" and "b" in state.sessions and "late" in state.sessions
