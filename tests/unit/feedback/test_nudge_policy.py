"""The nudge policy: every rule, table-driven, plus invariants over random streams."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feedback.nudge import (
    SLOT_MEMORY,
    NudgeConfig,
    NudgeState,
    PolicyResult,
    SuppressReason,
    Verdict,
    decide,
    release,
    slot_of,
)
from topology.schemas.analysis import TriggerEvidence, TriggerFired, TriggerType
from topology.settings import load_settings

T = TriggerType
R = SuppressReason
ON = NudgeConfig(enabled=True, cooldown_s=90.0, realert_cap=1, max_age_s=900.0)
NOW = 10_000.0


def fire(
    kind: T,
    run: int | None = None,
    *,
    alert: int | None = None,
    ts: float = NOW,
    session: str = "s1",
    event_id: str = "e1",
) -> TriggerFired:
    inactive = kind is T.INACTIVE
    return TriggerFired(
        trigger_id=f"{session}:{kind.value}:{run if not inactive else alert}:{event_id}",
        type=kind,
        student_key="otter",
        student_id="Otter",
        session_id=session,
        run_index=None if inactive else run,
        alert=(alert or 0) if inactive else None,
        ts=ts,
        timestamp="2026-05-06T09:14:07Z",
        playground="GOMars",
        event_id=event_id,
        detail="detail",
        evidence=TriggerEvidence(),
    )


def run(
    fires: list[TriggerFired],
    state: NudgeState | None = None,
    config: NudgeConfig = ON,
    *,
    now: float = NOW,
    in_progress: bool = False,
    last_run: int | None = 0,
) -> PolicyResult:
    return decide(fires, state or NudgeState(), config, now=now, run_in_progress=in_progress, last_run_index=last_run)


def verdicts(result: PolicyResult) -> list[tuple[str, str, str | None]]:
    return [(d.trigger.type.value, d.verdict.value, d.reason.value if d.reason else None) for d in result.decisions]


MOMENTARY = [T.WHEEL_SPIN, T.RESILIENCE, T.EXPLORER, T.ITERATIVE]


# -- gates -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(T))
def test_proactive_off_suppresses_everything(kind: T) -> None:
    result = run([fire(kind, 1)], config=NudgeConfig(enabled=False))
    assert verdicts(result) == [(kind.value, "suppress", "proactive_off")]
    assert result.state == NudgeState()


@pytest.mark.parametrize("kind", list(T))
def test_disabled_type(kind: T) -> None:
    config = replace(ON, disabled_types=frozenset({kind}))
    assert verdicts(run([fire(kind, 1)], config=config)) == [(kind.value, "suppress", "disabled_type")]
    other = next(k for k in T if k is not kind)
    assert verdicts(run([fire(other, 1)], config=config))[0][1] == "act"


@pytest.mark.parametrize(("age", "verdict"), [(0.0, "act"), (899.999, "act"), (900.0, "act"), (900.001, "suppress")])
def test_stale_boundary(age: float, verdict: str) -> None:
    result = run([fire(T.EXPLORER, 1, ts=NOW - age)])
    assert result.decisions[0].verdict.value == verdict
    if verdict == "suppress":
        assert result.decisions[0].reason is R.STALE


# -- one nudge per run -------------------------------------------------------------------


def test_several_fires_on_one_run_strongest_acts() -> None:
    fires = [fire(T.ITERATIVE, 3), fire(T.EXPLORER, 3), fire(T.RESILIENCE, 3), fire(T.WHEEL_SPIN, 3)]
    assert verdicts(run(fires, last_run=3)) == [
        ("wheel_spin", "act", None),
        ("resilience", "suppress", "lower_priority"),
        ("explorer", "suppress", "lower_priority"),
        ("iterative", "suppress", "lower_priority"),
    ]


@pytest.mark.parametrize(
    ("a", "b", "winner"),
    [
        (T.WHEEL_SPIN, T.RESILIENCE, T.WHEEL_SPIN),
        (T.RESILIENCE, T.EXPLORER, T.RESILIENCE),
        (T.EXPLORER, T.ITERATIVE, T.EXPLORER),
        (T.ITERATIVE, T.RESILIENCE, T.RESILIENCE),
        (T.ITERATIVE, T.WHEEL_SPIN, T.WHEEL_SPIN),
    ],
)
def test_pairwise_priority(a: T, b: T, winner: T) -> None:
    result = run([fire(a, 2), fire(b, 2)], last_run=2)
    acted = [d.trigger.type for d in result.decisions if d.verdict is Verdict.ACT]
    assert acted == [winner]


def test_fires_on_different_runs_are_independent_slots() -> None:
    first = run([fire(T.EXPLORER, 1)])
    second = run([fire(T.EXPLORER, 2, event_id="e2")], first.state, now=NOW + 100)
    assert verdicts(second) == [("explorer", "act", None)]


@pytest.mark.parametrize(
    ("earlier", "later", "reason"),
    [
        (T.EXPLORER, T.WHEEL_SPIN, "slot_used"),
        (T.EXPLORER, T.ITERATIVE, "lower_priority"),
        (T.EXPLORER, T.EXPLORER, "lower_priority"),
    ],
)
def test_slot_used_by_an_earlier_nudge(earlier: T, later: T, reason: str) -> None:
    first = run([fire(earlier, 4)], last_run=4)
    late = fire(later, 4, event_id="late")
    assert verdicts(run([late], first.state, now=NOW + 500, last_run=4)) == [(later.value, "suppress", reason)]


@pytest.mark.parametrize(
    ("momentary", "reason"),
    [(T.WHEEL_SPIN, "lower_priority"), (T.RESILIENCE, "slot_used"), (T.ITERATIVE, "slot_used")],
)
def test_inactive_counts_against_the_slot_after_the_last_run(momentary: T, reason: str) -> None:
    first = run([fire(momentary, 5)], last_run=5)
    alert = fire(T.INACTIVE, alert=0, event_id="idle1")
    assert verdicts(run([alert], first.state, now=NOW + 300, last_run=5)) == [("inactive", "suppress", reason)]
    # after another run the slot is free again
    assert verdicts(run([alert], first.state, now=NOW + 300, last_run=6)) == [("inactive", "act", None)]


def test_slots_are_per_session() -> None:
    first = run([fire(T.WHEEL_SPIN, 2, session="a")], last_run=2)
    other = fire(T.EXPLORER, 2, session="b")
    assert verdicts(run([other], first.state, now=NOW + 100, last_run=2)) == [("explorer", "act", None)]


@pytest.mark.parametrize(
    ("kind", "run_index", "last_run", "slot"),
    [(T.EXPLORER, 3, 7, 3), (T.INACTIVE, None, 7, 7), (T.INACTIVE, None, None, -1), (T.WHEEL_SPIN, None, 2, 2)],
)
def test_slot_of(kind: T, run_index: int | None, last_run: int | None, slot: int) -> None:
    f = fire(kind, run_index)
    if kind is not T.INACTIVE and run_index is None:
        f = f.model_copy(update={"run_index": None})
    assert slot_of(f, last_run) == slot


# -- cooldown -----------------------------------------------------------------------------


@pytest.mark.parametrize(("gap", "verdict"), [(0, "suppress"), (89.9, "suppress"), (90, "act"), (500, "act")])
def test_cooldown(gap: float, verdict: str) -> None:
    first = run([fire(T.EXPLORER, 1)])
    nxt = fire(T.ITERATIVE, 2, ts=NOW + gap)
    result = run([nxt], first.state, now=NOW + gap, last_run=2)
    assert result.decisions[0].verdict.value == verdict
    if verdict == "suppress":
        assert result.decisions[0].reason is R.COOLDOWN
        assert result.state == first.state


def test_cooldown_zero_never_suppresses() -> None:
    config = replace(ON, cooldown_s=0.0)
    first = run([fire(T.EXPLORER, 1)], config=config)
    assert verdicts(run([fire(T.EXPLORER, 2)], first.state, config))[0][1] == "act"


# -- inactive re-alerts --------------------------------------------------------------------


def alerts(cap: int, n: int, *, spell: str = "idle1", last_run: int | None = 0) -> list[str]:
    config = replace(ON, realert_cap=cap)
    state, out = NudgeState(), []
    for k in range(n):
        t = NOW + 600 * k
        result = run([fire(T.INACTIVE, alert=k, ts=t, event_id=spell)], state, config, now=t, last_run=last_run)
        state = result.state
        d = result.decisions[0]
        out.append(d.reason.value if d.reason else d.verdict.value)
    return out


@pytest.mark.parametrize(
    ("cap", "expected"),
    [
        (0, ["act", "realert_cap", "realert_cap"]),
        (1, ["act", "act", "realert_cap", "realert_cap"]),
        (2, ["act", "act", "act", "realert_cap"]),
    ],
)
def test_realert_cap(cap: int, expected: list[str]) -> None:
    assert alerts(cap, len(expected)) == expected


def test_alert_zero_is_always_allowed_even_with_cap_zero() -> None:
    assert alerts(0, 1) == ["act"]


def test_realert_counts_reset_for_a_new_spell_after_a_new_run() -> None:
    config = replace(ON, realert_cap=1)
    state = NudgeState()
    for k in range(3):
        state = run([fire(T.INACTIVE, alert=k, ts=NOW + 600 * k)], state, config, now=NOW + 600 * k).state
    later = NOW + 5000
    spell2 = [fire(T.INACTIVE, alert=k, ts=later + 600 * k, event_id="idle2") for k in range(3)]
    out = []
    for k, f in enumerate(spell2):
        result = run([f], state, config, now=later + 600 * k, last_run=1)
        state = result.state
        out.append(result.decisions[0].reason or result.decisions[0].verdict)
    assert out == [Verdict.ACT, Verdict.ACT, R.REALERT_CAP]


def test_a_new_spell_without_a_new_run_shares_the_slot() -> None:
    state = run([fire(T.INACTIVE, alert=0)], last_run=3).state
    again = fire(T.INACTIVE, alert=0, ts=NOW + 1000, event_id="idle2")
    assert verdicts(run([again], state, now=NOW + 1000, last_run=3)) == [("inactive", "suppress", "lower_priority")]


def test_realert_after_a_cooled_down_first_alert_acts() -> None:
    state = run([fire(T.EXPLORER, 0)], last_run=0).state
    state2 = run([fire(T.INACTIVE, alert=0, ts=NOW + 10)], state, now=NOW + 10, last_run=1).state
    assert state2 == state  # cooldown: nothing recorded
    result = run([fire(T.INACTIVE, alert=1, ts=NOW + 610)], state2, now=NOW + 610, last_run=1)
    assert verdicts(result) == [("inactive", "act", None)]
    assert result.state.realerts == 1


# -- holding during a run --------------------------------------------------------------------


def test_hold_while_running_then_release_acts() -> None:
    held = run([fire(T.EXPLORER, 1)], in_progress=True, last_run=1)
    assert verdicts(held) == [("explorer", "hold", None)]
    assert held.state.held is not None and held.state.last_nudge_ts is None
    released = release(held.state, ON, now=NOW + 30)
    assert verdicts(released) == [("explorer", "act", None)]
    assert released.state.held is None and released.state.last_nudge_ts == NOW + 30


def test_holds_reads_the_held_fire_from_the_json_form() -> None:
    held = run([fire(T.EXPLORER, 1)], in_progress=True, last_run=1).state
    acted = run([fire(T.EXPLORER, 1)], last_run=1).state
    assert acted.last_nudge_ts is not None  # a non-empty state that holds nothing
    for state in (held, acted, NudgeState()):
        raw = state.to_json()
        assert NudgeState.holds(raw) is (NudgeState.from_json(raw).held is not None)
    assert NudgeState.holds(held.to_json()) and not NudgeState.holds(acted.to_json())
    assert not NudgeState.holds(None) and not NudgeState.holds({})


def test_release_with_nothing_held() -> None:
    assert release(NudgeState(), ON, now=NOW) == PolicyResult((), NudgeState())


def test_stronger_fire_supersedes_the_held_one() -> None:
    held = run([fire(T.ITERATIVE, 1)], in_progress=True, last_run=1)
    result = run([fire(T.WHEEL_SPIN, 1)], held.state, in_progress=True, last_run=1)
    assert verdicts(result) == [("iterative", "suppress", "superseded"), ("wheel_spin", "hold", None)]
    assert result.state.held is not None and result.state.held.type is T.WHEEL_SPIN


@pytest.mark.parametrize("weaker", [T.RESILIENCE, T.EXPLORER, T.ITERATIVE, T.WHEEL_SPIN])
def test_weaker_or_equal_fire_does_not_replace_the_held_one(weaker: T) -> None:
    held = run([fire(T.WHEEL_SPIN, 1)], in_progress=True, last_run=1)
    result = run([fire(weaker, 1, event_id="x")], held.state, in_progress=True, last_run=1)
    assert verdicts(result) == [(weaker.value, "suppress", "lower_priority")]
    assert result.state.held == held.state.held


def test_batch_during_a_run_holds_only_the_strongest() -> None:
    result = run([fire(T.RESILIENCE, 2), fire(T.ITERATIVE, 2)], in_progress=True, last_run=2)
    assert verdicts(result) == [("resilience", "hold", None), ("iterative", "suppress", "lower_priority")]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (dict(enabled=False), "proactive_off"),
        (dict(disabled_types=frozenset({T.EXPLORER})), "disabled_type"),
        (dict(max_age_s=10.0), "stale"),
    ],
)
def test_release_rechecks_the_gates(change: dict[str, Any], reason: str) -> None:
    held = run([fire(T.EXPLORER, 1)], in_progress=True, last_run=1)
    result = release(held.state, replace(ON, **change), now=NOW + 60)
    assert verdicts(result) == [("explorer", "suppress", reason)]
    assert result.state.held is None


def test_cooldown_is_judged_at_release_time() -> None:
    state = run([fire(T.EXPLORER, 0)], last_run=0).state
    held = run([fire(T.ITERATIVE, 1, ts=NOW + 10)], state, now=NOW + 10, in_progress=True, last_run=1)
    assert verdicts(held) == [("iterative", "hold", None)]
    assert verdicts(release(held.state, ON, now=NOW + 50)) == [("iterative", "suppress", "cooldown")]
    assert verdicts(release(held.state, ON, now=NOW + 95)) == [("iterative", "act", None)]


def test_decide_after_the_run_releases_the_held_fire_first() -> None:
    held = run([fire(T.EXPLORER, 1)], in_progress=True, last_run=1)
    result = run([fire(T.ITERATIVE, 2)], held.state, now=NOW + 200, last_run=2)
    assert verdicts(result) == [("explorer", "act", None), ("iterative", "suppress", "cooldown")]


def test_inactive_alert_during_a_long_run_is_held() -> None:
    result = run([fire(T.INACTIVE, alert=0)], in_progress=True, last_run=4)
    assert verdicts(result) == [("inactive", "hold", None)]
    assert result.state.held_slot == 4


# -- idempotence and state -------------------------------------------------------------------


def test_replayed_fire_acts_again_as_duplicate_without_changing_state() -> None:
    first = run([fire(T.EXPLORER, 1)])
    again = run([fire(T.EXPLORER, 1)], first.state, now=NOW + 5)
    assert [(d.verdict, d.duplicate) for d in again.decisions] == [(Verdict.ACT, True)]
    assert again.state == first.state


def test_replayed_held_fire_stays_held() -> None:
    held = run([fire(T.EXPLORER, 1)], in_progress=True)
    again = run([fire(T.EXPLORER, 1)], held.state, in_progress=True)
    assert [(d.verdict, d.duplicate) for d in again.decisions] == [(Verdict.HOLD, True)]
    assert again.state == held.state


def test_state_json_round_trip() -> None:
    state = run([fire(T.INACTIVE, alert=0)]).state
    state = run([fire(T.INACTIVE, alert=1, ts=NOW + 600)], state, now=NOW + 600).state
    state = run([fire(T.EXPLORER, 3, ts=NOW + 900)], state, now=NOW + 900, in_progress=True).state
    assert state.held is not None and state.realerts == 1
    import json

    assert NudgeState.from_json(json.loads(json.dumps(state.to_json()))) == state
    assert NudgeState.from_json(None) == NudgeState() == NudgeState.from_json({})


def test_used_slots_are_bounded() -> None:
    state, config = NudgeState(), replace(ON, cooldown_s=0.0)
    for i in range(SLOT_MEMORY + 5):
        state = run([fire(T.EXPLORER, i)], state, config).state
    assert len(state.used) == SLOT_MEMORY
    assert state.used[0].slot == 5


def test_config_from_settings() -> None:
    settings = load_settings(
        trigger_daemon_enabled=True,
        trigger_disabled="explorer,inactive",
        nudge_cooldown_s=30,
        inactive_realert_nudge_cap=2,
        nudge_max_age_s=120,
    )
    assert NudgeConfig.from_settings(settings) == NudgeConfig(
        enabled=True,
        disabled_types=frozenset({T.EXPLORER, T.INACTIVE}),
        cooldown_s=30.0,
        realert_cap=2,
        max_age_s=120.0,
    )
    assert NudgeConfig.from_settings(load_settings()).enabled is False


# -- invariants over random streams -----------------------------------------------------------

STEP = st.tuples(
    st.sampled_from(["run", "fires", "idle", "end"]),
    st.lists(st.sampled_from(MOMENTARY), max_size=3, unique=True),
    st.floats(min_value=1, max_value=400),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(STEP, max_size=25), st.booleans())
def test_invariants(steps: list[tuple[str, list[T], float]], enabled: bool) -> None:
    config = replace(ON, enabled=enabled)
    state, now, last_run, in_progress, alert = NudgeState(), NOW, -1, False, 0
    acts: list[tuple[float, Any]] = []
    for action, kinds, gap in steps:
        now += gap
        fires: list[TriggerFired] = []
        if action == "run":
            last_run, in_progress, alert = last_run + 1, True, 0
            fires = [fire(k, last_run, ts=now) for k in kinds]
        elif action == "idle":
            fires = [fire(T.INACTIVE, alert=alert, ts=now, event_id=f"idle{last_run}")]
            alert += 1
        elif action == "end":
            in_progress = False
        result = decide(
            fires,
            state,
            config,
            now=now,
            run_in_progress=in_progress,
            last_run_index=last_run if last_run >= 0 else None,
        )
        decided = {d.trigger.trigger_id for d in result.decisions}
        assert {f.trigger_id for f in fires} <= decided
        for d in result.decisions:
            assert (d.reason is not None) == (d.verdict is Verdict.SUPPRESS)
            if d.verdict is Verdict.ACT and not d.duplicate:
                acts.append((now, d.trigger))
        if in_progress:
            assert not any(d.verdict is Verdict.ACT and d.trigger in fires for d in result.decisions)
        state = result.state
    if not enabled:
        assert acts == []
    times = [t for t, _ in acts]
    assert all(b - a >= config.cooldown_s for a, b in zip(times, times[1:], strict=False))
    momentary_slots = [(f.session_id, f.run_index) for _, f in acts if f.type is not T.INACTIVE]
    assert len(momentary_slots) == len(set(momentary_slots))
