"""The nudge policy inside the engine: every fire ends as one request."""

from __future__ import annotations

from collections import Counter

from feedback.nudge import NudgeConfig
from streams.config import EngineConfig
from streams.engine import StudentEngine
from streams.local import analyze_lines, read_lines
from streams.nudging import answer_request
from streams.programs import DictProgramStore
from streams.scoring import TreeEditScorer
from streams.state import StudentState
from tests.datafiles import SAMPLE_CLASSROOM, SAMPLE_MALFORMED
from tests.unit.streams.test_engine import T0, FakeScorer, ev
from topology.schemas import ChatRequest, FeedbackRequest

ON = NudgeConfig(enabled=True, cooldown_s=0.0, max_age_s=10_000.0)


def engine(nudge: NudgeConfig) -> StudentEngine:
    return StudentEngine(StudentState("otter"), EngineConfig(), FakeScorer(), DictProgramStore(), nudge)


def requests(outputs: list[object]) -> list[FeedbackRequest]:
    return [o for o in outputs if isinstance(o, FeedbackRequest)]


def wheel_spin_session(with_ends: bool) -> list:
    events = []
    for i in range(7):
        events.append(ev(i * 30, "runProject", xml="same:0"))
        if with_ends:
            events.append(ev(i * 30 + 10, "projectEnd"))
    return events


def test_a_fire_during_a_run_is_held_until_the_run_ends() -> None:
    eng, out = engine(ON), []
    for e in wheel_spin_session(with_ends=True):
        got = requests(eng.on_event(e))
        out.append((e.event_type, [(r.trigger.type.value, r.decision) for r in got]))
    # run 6 fires wheel_spin on its runProject; the request comes with its projectEnd
    assert out[12] == ("runProject", [])
    assert out[13] == ("projectEnd", [("wheel_spin", "act")])
    act = requests(engine(ON).on_event(ev(0, "runProject", xml="a:0")))
    assert act == []


def test_proactive_lane_off_suppresses_every_fire_with_its_reason() -> None:
    eng = engine(NudgeConfig(enabled=False))
    got = [r for e in wheel_spin_session(with_ends=False) for r in requests(eng.on_event(e))]
    assert [(r.trigger.type.value, r.decision, r.suppress_reason) for r in got] == [
        ("wheel_spin", "suppress", "proactive_off")
    ]
    assert got[0].metrics is None and got[0].program_xml is None


def test_act_request_carries_measurements_and_program() -> None:
    eng = engine(ON)
    for e in wheel_spin_session(with_ends=True):
        got = requests(eng.on_event(e))
    (req,) = got
    assert req.metrics is not None and req.metrics.run_count == 7 and not req.metrics.run_in_progress
    assert req.program_xml == "same:0"
    again = engine(ON)
    replayed = [r for e in wheel_spin_session(with_ends=True) for r in requests(again.on_event(e))]
    assert [r.request_id for r in replayed] == [req.request_id]  # derived from the trigger


def test_inactive_alert_by_the_clock_acts_and_a_late_one_is_resolved() -> None:
    eng = engine(ON)
    eng.on_event(ev(0, "blockCreated"))
    by_clock = requests(eng.advance(T0 + 250))
    assert [(r.trigger.alert, r.decision) for r in by_clock] == [(0, "act")]
    late = engine(ON)
    late.on_event(ev(0, "blockCreated"))
    returned = requests(late.on_event(ev(500, "blockCreated")))
    assert [(r.trigger.alert, r.decision, r.suppress_reason) for r in returned] == [(0, "suppress", "resolved")]


def test_reactive_requests_canned_or_measured() -> None:
    chat = ChatRequest(request_id="q1", student_key="otter", student_id="Otter", text="help?", ts=T0)
    assert answer_request(chat, None, None).canned == "no_session"
    eng = engine(ON)
    eng.on_event(ev(0, "runProject", xml="a:0"))
    assert answer_request(chat, eng.state, eng.programs, eng.metrics).canned == "run_in_progress"
    eng.on_event(ev(5, "projectEnd"))
    req = answer_request(chat, eng.state, eng.programs, eng.metrics)
    assert req.canned is None and req.metrics is not None and req.program_xml == "a:0"
    assert req.session_id == "s1" and req.question == "help?"


def test_every_fire_of_the_samples_ends_as_exactly_one_request() -> None:
    for path in (SAMPLE_CLASSROOM, SAMPLE_MALFORMED):
        run = analyze_lines(read_lines(path.read_bytes()), EngineConfig(), TreeEditScorer(), NudgeConfig(enabled=True))
        fires = Counter(t.trigger_id for t in run.observed.triggers)
        decided = Counter(r.trigger.trigger_id for r in run.observed.requests if r.trigger)
        assert decided == fires
        acted = [r for r in run.observed.requests if r.decision == "act"]
        assert acted, "some nudges act with the lane on"
        per_run = Counter(
            (r.student_key, r.session_id, r.trigger.run_index) for r in acted if r.trigger.run_index is not None
        )
        assert max(per_run.values()) == 1  # at most one nudge per run


def test_evaluate_session_reproduces_the_stream_for_one_stored_session() -> None:
    from streams.local import evaluate_session
    from tests.datafiles import FIXTURES
    from topology.settings import load_settings

    log = FIXTURES / "reference" / "07_partial_correctness_reassure_a.ndjson"
    run = analyze_lines(read_lines(log.read_bytes()), EngineConfig(), TreeEditScorer())
    events = run.observed.events
    result = evaluate_session(events, load_settings(trigger_daemon_enabled=True))
    assert (
        [(t.type.value, t.run_index) for t in result.triggers]
        == [(t.type.value, t.run_index) for t in run.observed.triggers]
        == [("wheel_spin", 6)]
    )
    assert [(r.trigger.trigger_id, r.decision) for r in result.requests] == [
        (run.observed.triggers[0].trigger_id, "act")
    ]
    later = evaluate_session(events, load_settings(), now=events[-1].ts + 3600)
    assert [t.alert for t in later.triggers if t.type.value == "inactive"] == [0, 1, 2, 3, 4, 5]
    assert {r.decision for r in later.requests} == {"suppress"}  # the proactive lane is off


def test_a_playground_reset_stops_the_run_and_releases_the_held_nudge() -> None:
    eng = engine(ON)
    for e in wheel_spin_session(with_ends=False)[:-1]:
        eng.on_event(e)
    assert requests(eng.on_event(ev(200, "runProject", xml="same:0"))) == []  # held: running
    assert eng.state.sessions["s1"].run_in_progress
    released = requests(eng.on_event(ev(205, "playgroundReset")))
    assert [(r.trigger.type.value, r.decision) for r in released] == [("wheel_spin", "act")]
    assert not eng.state.sessions["s1"].run_in_progress
    assert eng.state.sessions["s1"].segmenter.run_open  # the RUN episode itself goes on
