"""Engine rules that the golden files do not isolate, table-driven."""

from __future__ import annotations

import itertools

from streams.config import EngineConfig
from streams.engine import StudentEngine
from streams.programs import DictProgramStore, ProgramInfo, UnusableWorkspace
from streams.state import StudentState
from topology.schemas import (
    DeadLetter,
    EpisodeClosed,
    NormalizedEvent,
    PauseDetected,
    RunScored,
    TriggerFired,
)

T0 = 1_781_528_000.0


class FakeScorer:
    """Programs are strings ``name:d``; the distance to one is its ``d``."""

    def inspect(self, xml: str | None) -> ProgramInfo:
        if xml is not None and xml.startswith("bad"):
            raise UnusableWorkspace("xml_error", "not xml")
        return ProgramInfo(1, 1, 3)

    def distance(self, before: str | None, after: str | None) -> int | None:
        value = (after or "x:0").rsplit(":", 1)[1]
        return None if value == "huge" else int(value)


_ids = itertools.count(1)


def ev(
    t: float,
    kind: str = "blockChanged",
    *,
    session: str = "s1",
    xml: str | None = None,
    playground: str | None = "GOMars",
    status: str | None = None,
) -> NormalizedEvent:
    return NormalizedEvent(
        event_id=str(next(_ids)),
        envelope_id_int=None,
        student_key="otter",
        student_id="Otter",
        session_id=session,
        event_type=kind,
        ts=T0 + t,
        timestamp="t",
        playground=playground,
        workspace_status=status or ("ok" if xml else "empty_workspace"),
        workspace_xml=xml,
    )


def engine(**config: object) -> StudentEngine:
    return StudentEngine(StudentState("otter"), EngineConfig(**config), FakeScorer(), DictProgramStore())  # type: ignore[arg-type]


def runs(distances: list[int | str], *, step: float = 20, playground: str = "GOMars") -> list[NormalizedEvent]:
    """Run events whose programs are at the given distances (``"="`` = identical)."""
    out, program = [], "p0:0"
    for i, d in enumerate(distances):
        if d != "=":
            program = f"p{i}:{d}"
        out.append(ev(i * step, "runProject", xml=program, playground=playground))
    return out


def alerts(outputs: list[object]) -> list[TriggerFired]:
    return [o for o in outputs if isinstance(o, TriggerFired)]


def fires(outputs: list[object]) -> list[tuple[str, int | None]]:
    return [
        (o.type.value, o.run_index if o.run_index is not None else o.alert)
        for o in outputs
        if isinstance(o, TriggerFired)
    ]


def feed(eng: StudentEngine, events: list[NormalizedEvent]) -> list[object]:
    out: list[object] = []
    for e in events:
        out += eng.on_event(e)
    return out


def test_identical_reruns_fire_wheel_spin_at_the_sixth_and_rearm() -> None:
    out = feed(engine(), runs([0] + ["="] * 6 + [1] + ["="] * 6))
    assert fires(out) == [("wheel_spin", 6), ("resilience", 7), ("wheel_spin", 13)]
    scored = [o for o in out if isinstance(o, RunScored)]
    assert [r.edit_distance for r in scored][:3] == [None, 0, 0]


def test_playground_switch_starts_a_fresh_stretch() -> None:
    events = runs([0] + ["="] * 5) + [ev(200, "runProject", xml="q:3", playground="RoverRescue")]
    events += [ev(220 + 20 * i, "runProject", xml="q:3", playground="RoverRescue") for i in range(6)]
    out = feed(engine(), events)
    scored = [o for o in out if isinstance(o, RunScored)]
    assert scored[6].edit_distance is None  # first run of the new stretch
    assert fires(out) == [("wheel_spin", 12)]  # 5 zeros before the switch do not count


def test_missing_playground_keeps_the_stretch() -> None:
    events = [ev(0, "runProject", xml="a:0"), ev(20, "runProject", xml="b:2", playground=None)]
    scored = [o for o in feed(engine(), events) if isinstance(o, RunScored)]
    assert [(r.playground, r.edit_distance) for r in scored] == [("GOMars", None), ("GOMars", 2)]


def test_unusable_workspace_is_not_a_run_but_is_activity() -> None:
    events = [
        ev(0, "runProject", xml="a:0"),
        ev(200, "runProject", status="xml_error"),
        ev(400, "runProject", xml="bad xml"),
        ev(600, "runProject", xml="b:4"),
    ]
    out = feed(engine(), events)
    dead = [o for o in out if isinstance(o, DeadLetter)]
    assert [d.reason.value for d in dead] == ["xml_error", "xml_error"]
    scored = [o for o in out if isinstance(o, RunScored)]
    assert [(r.run_index, r.edit_distance) for r in scored] == [(0, None), (1, 4)]
    assert fires(out) == []  # gaps of 200 s: the unscored runs were activity


def test_inactive_strictly_after_240_and_every_600_while_idle() -> None:
    out = feed(engine(), [ev(0), ev(240), ev(481), ev(481 + 1441)])
    fired = alerts(out)
    # gap 240: nothing; gap 241: one alert; gap 1441: alerts at 240, 840 and 1440 s
    assert [(a.alert, a.ts - T0) for a in fired] == [(0, 480), (0, 721), (1, 1321), (2, 1921)]
    assert len({a.trigger_id for a in fired}) == 4


def test_clock_advance_fires_trailing_alerts_inclusive() -> None:
    eng = engine()
    feed(eng, [ev(0)])
    assert alerts(eng.advance(T0 + 239)) == []
    first = alerts(eng.advance(T0 + 240))
    assert [(a.alert, a.trailing) for a in first] == [(0, True)]
    assert alerts(eng.advance(T0 + 240)) == []  # idempotent
    assert [a.alert for a in alerts(eng.advance(T0 + 2000))] == [1, 2]


def test_alerts_stop_after_the_recency_window() -> None:
    eng = engine(recency_s=1000.0)
    feed(eng, [ev(0)])
    assert [a.alert for a in alerts(eng.advance(T0 + 900))] == [0, 1]  # 240 s, 840 s
    assert alerts(eng.advance(T0 + 10_000)) == []  # 1440 s is past the window
    assert eng.expired(T0 + 1001) and not eng.expired(T0 + 999)


def test_sessions_of_one_student_interleave() -> None:
    eng = engine()
    events = []
    for i in range(8):
        events.append(ev(i * 20, "runProject", session="s1", xml="same:0"))
        events.append(ev(i * 20 + 10, "runProject", session="s2", xml=f"x{i}:1"))
    out = feed(eng, events)
    by_session = {(o.session_id, o.type.value) for o in out if isinstance(o, TriggerFired)}
    assert by_session == {("s1", "wheel_spin"), ("s2", "iterative")}
    # inactive belongs to the session of the last event before the idle spell
    alert = alerts(eng.advance(T0 + 1000))[0]
    assert alert.session_id == "s2"


def test_episodes_and_pauses_stream_out_incrementally() -> None:
    eng = engine()
    out = feed(
        eng,
        [
            ev(0, "blockCreated"),
            ev(10, "menuOpen"),
            ev(20, "runProject", xml="a:0"),
            ev(30, "playgroundData"),
            ev(31, "projectEnd"),
            ev(50, "blockMoved"),
            ev(400, "loadProject"),
        ],
    )
    kinds = [(type(o).__name__, o.type.value) for o in out if isinstance(o, (EpisodeClosed, PauseDetected))]
    assert kinds == [
        ("EpisodeClosed", "CODE"),
        ("EpisodeClosed", "RUN"),
        ("PauseDetected", "POST_RUN_PAUSE"),
        ("PauseDetected", "INACTIVE_PAUSE"),
        ("EpisodeClosed", "CODE"),
        ("EpisodeClosed", "RESET"),
    ]
    assert eng.state.sessions["s1"].post_run_pauses == 1


def test_live_clock_closes_an_episode_once_no_event_can_join() -> None:
    eng = engine()
    feed(eng, [ev(0, "blockCreated")])
    assert [o for o in eng.advance(T0 + 299) if isinstance(o, EpisodeClosed)] == []
    closed = [o for o in eng.advance(T0 + 300) if isinstance(o, EpisodeClosed)]
    assert [(c.type.value, c.event_count) for c in closed] == [("CODE", 1)]


def test_state_round_trips_through_bytes_mid_stream() -> None:
    events = runs([0] + ["="] * 3 + [2, 3] + ["="] * 6)
    whole = fires(feed(engine(), events))
    eng, store = engine(), DictProgramStore()
    eng.programs = store
    out: list[object] = []
    for e in events:
        state = StudentState.from_bytes(eng.state.to_bytes(), eng.config)
        eng = StudentEngine(state, eng.config, FakeScorer(), store)
        out += eng.on_event(e)
    assert fires(out) == whole


def test_not_comparable_pair_scores_null_and_changes_nothing() -> None:
    out = feed(engine(), runs([0, 1, 1, "huge", 1, 1, 1, 1]))
    scored = [o for o in out if isinstance(o, RunScored)]
    assert [(r.edit_distance, r.comparable) for r in scored][3] == (None, False)
    assert fires(out) == [("iterative", 7)]  # the null run neither counted nor reset


def test_a_student_idle_past_the_recency_window_gets_no_alerts() -> None:
    eng = engine(recency_s=3600.0)
    feed(eng, [ev(0, "blockCreated")])
    out = eng.advance(T0 + 7200)
    assert alerts(out) == [] and eng.expired(T0 + 7200)
    assert [o.type.value for o in out if isinstance(o, EpisodeClosed)] == ["CODE"]
