"""The nudge policy: which fired triggers become a proactive message, and when.

A pure function of (fires, state, config, clock, run status).  The analysis
engine keeps one :class:`NudgeState` per student (its JSON form in a table),
calls :func:`decide` with the fires of one event, and :func:`release` when
the student's run ends (``projectEnd``, another non-soft event, or a long
idle).  Every fire gets exactly one typed :class:`Decision`: act, hold, or
suppress with a reason; a held fire later gets a second decision (act or
suppress) from :func:`release` or when a stronger fire supersedes it.

Rules, in order (the first that applies decides):

1. a fire that already acted (same ``trigger_id``) acts again, marked
   ``duplicate``, and changes nothing; the same holds for the held fire;
2. proactive lane off → ``proactive_off``; 3. type disabled → ``disabled_type``;
4. older than the recency window against the clock → ``stale``;
5. one nudge per run: a momentary fire uses its run's slot, an inactive
   alert the slot after the last run (alerts of one idle spell share it).
   A slot already used → ``lower_priority`` (the user had a stronger or
   equal one) or ``slot_used`` (a weaker one was already sent);
6. a stronger (or equal, earlier) fire is held → ``lower_priority``;
7. re-alert ``k >= 1`` past the cap for this idle spell → ``realert_cap``;
8. the run is still going → **hold** (a weaker held fire is ``superseded``);
9. sent less than the cooldown ago → ``cooldown`` (checked when acting, so a
   held fire is judged at release time);
10. otherwise **act**.

Priority: wheel_spin > inactive > resilience > explorer > iterative.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from topology.schemas.analysis import TriggerFired, TriggerType
from topology.settings import Settings, default

PRIORITY: dict[TriggerType, int] = {
    TriggerType.WHEEL_SPIN: 5,
    TriggerType.INACTIVE: 4,
    TriggerType.RESILIENCE: 3,
    TriggerType.EXPLORER: 2,
    TriggerType.ITERATIVE: 1,
}
#: How many used slots the state remembers (older runs cannot fire again).
SLOT_MEMORY = 16
#: The slot of an inactive alert when the session has had no run yet.
BEFORE_FIRST_RUN = -1


class Verdict(StrEnum):
    ACT = "act"
    HOLD = "hold"
    SUPPRESS = "suppress"


class SuppressReason(StrEnum):
    PROACTIVE_OFF = "proactive_off"
    DISABLED_TYPE = "disabled_type"
    STALE = "stale"
    LOWER_PRIORITY = "lower_priority"
    SLOT_USED = "slot_used"
    REALERT_CAP = "realert_cap"
    COOLDOWN = "cooldown"
    SUPERSEDED = "superseded"


@dataclass(frozen=True, slots=True)
class NudgeConfig:
    """The policy's settings (built once from :class:`~topology.settings.Settings`).

    The defaults are the settings' own (:func:`topology.settings.default`).
    """

    enabled: bool = default("trigger_daemon_enabled")
    disabled_types: frozenset[TriggerType] = frozenset(TriggerType(t) for t in default("trigger_disabled"))
    cooldown_s: float = default("nudge_cooldown_s")
    realert_cap: int = default("inactive_realert_nudge_cap")
    max_age_s: float = default("nudge_max_age_s")

    @classmethod
    def from_settings(cls, settings: Settings) -> NudgeConfig:
        """Read the nudge-policy fields of the settings object."""
        return cls(
            enabled=settings.trigger_daemon_enabled,
            disabled_types=frozenset(TriggerType(t) for t in settings.trigger_disabled),
            cooldown_s=settings.nudge_cooldown_s,
            realert_cap=settings.inactive_realert_nudge_cap,
            max_age_s=settings.nudge_max_age_s,
        )


@dataclass(frozen=True, slots=True)
class SlotUse:
    """A nudge that was sent: which run slot of which session it used."""

    session_id: str
    slot: int
    trigger_id: str
    type: TriggerType
    spell: str | None = None


@dataclass(frozen=True, slots=True)
class NudgeState:
    """Per-student policy state.  Small, immutable, JSON-serializable.

    ``used`` lists the most recent sent nudges (bounded); ``spell`` /
    ``realerts`` count re-alert nudges sent in the current idle spell;
    ``held`` is the fire waiting for the run to end, with its slot.
    """

    last_nudge_ts: float | None = None
    used: tuple[SlotUse, ...] = ()
    spell: str | None = None
    realerts: int = 0
    held: TriggerFired | None = None
    held_slot: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form (for the engine's table)."""
        return {
            "last": self.last_nudge_ts,
            "used": [[u.session_id, u.slot, u.trigger_id, u.type.value, u.spell] for u in self.used],
            "spell": self.spell,
            "realerts": self.realerts,
            "held": self.held.model_dump(mode="json") if self.held else None,
            "held_slot": self.held_slot,
        }

    @staticmethod
    def holds(raw: Mapping[str, Any] | None) -> bool:
        """Whether the JSON form holds a fire (``from_json(raw).held`` is set),
        read without building the state."""
        return bool(raw and raw.get("held"))

    @classmethod
    def from_json(cls, raw: Mapping[str, Any] | None) -> NudgeState:
        """Inverse of :meth:`to_json`; an empty or missing mapping is a fresh state."""
        if not raw:
            return cls()
        used = tuple(SlotUse(s, int(n), t, TriggerType(k), sp) for s, n, t, k, sp in raw["used"])
        held = TriggerFired.model_validate(raw["held"]) if raw.get("held") else None
        return cls(raw["last"], used, raw["spell"], raw["realerts"], held, raw["held_slot"])


@dataclass(frozen=True, slots=True)
class Decision:
    """What became of one fire.  ``reason`` is set exactly when suppressed."""

    trigger: TriggerFired
    verdict: Verdict
    reason: SuppressReason | None = None
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class PolicyResult:
    """The decisions of one call, in order, and the state to store."""

    decisions: tuple[Decision, ...]
    state: NudgeState


def priority(trigger_type: TriggerType) -> int:
    """Higher wins when fires compete for one slot."""
    return PRIORITY[trigger_type]


def spell_key(fire: TriggerFired) -> str | None:
    """Identity of an inactive alert's idle spell (``None`` for momentary types)."""
    if fire.type is not TriggerType.INACTIVE:
        return None
    anchor = fire.event_id or str(fire.evidence.idle_since_ts)
    return f"{fire.session_id}/{anchor}"


def slot_of(fire: TriggerFired, last_run_index: int | None) -> int:
    """The run slot a fire competes for."""
    if fire.type is not TriggerType.INACTIVE and fire.run_index is not None:
        return fire.run_index
    return last_run_index if last_run_index is not None else BEFORE_FIRST_RUN


def _suppress(fire: TriggerFired, reason: SuppressReason) -> Decision:
    return Decision(fire, Verdict.SUPPRESS, reason)


def _gate(fire: TriggerFired, config: NudgeConfig, now: float) -> SuppressReason | None:
    """Rules that need no state: lane switch, disabled type, recency."""
    if not config.enabled:
        return SuppressReason.PROACTIVE_OFF
    if fire.type in config.disabled_types:
        return SuppressReason.DISABLED_TYPE
    if now - fire.ts > config.max_age_s:
        return SuppressReason.STALE
    return None


def _slot_conflict(fire: TriggerFired, slot: int, state: NudgeState) -> SuppressReason | None:
    spell = spell_key(fire)
    for use in state.used:
        if use.session_id != fire.session_id or use.slot != slot:
            continue
        if spell is not None and use.spell == spell:
            continue  # a re-alert of the same idle spell: the cap decides
        if priority(use.type) >= priority(fire.type):
            return SuppressReason.LOWER_PRIORITY
        return SuppressReason.SLOT_USED
    return None


def _over_cap(fire: TriggerFired, state: NudgeState, config: NudgeConfig) -> bool:
    alert = fire.alert or 0
    if fire.type is not TriggerType.INACTIVE or alert < 1:
        return False
    count = state.realerts if state.spell == spell_key(fire) else 0
    return count >= config.realert_cap


def _record(fire: TriggerFired, slot: int, state: NudgeState, now: float) -> NudgeState:
    spell = spell_key(fire)
    realerts = state.realerts if state.spell == spell else 0
    if spell is not None and (fire.alert or 0) >= 1:
        realerts += 1
    use = SlotUse(fire.session_id, slot, fire.trigger_id, fire.type, spell)
    return replace(
        state,
        last_nudge_ts=now,
        used=(*state.used, use)[-SLOT_MEMORY:],
        spell=spell if spell is not None else state.spell,
        realerts=realerts if spell is not None else state.realerts,
    )


def _act_or_cool(
    fire: TriggerFired, slot: int, state: NudgeState, config: NudgeConfig, now: float
) -> tuple[Decision, NudgeState]:
    if state.last_nudge_ts is not None and now - state.last_nudge_ts < config.cooldown_s:
        return _suppress(fire, SuppressReason.COOLDOWN), state
    return Decision(fire, Verdict.ACT), _record(fire, slot, state, now)


def _hold(fire: TriggerFired, slot: int, state: NudgeState) -> tuple[list[Decision], NudgeState]:
    out = [Decision(fire, Verdict.HOLD)]
    if state.held is not None:
        out.insert(0, _suppress(state.held, SuppressReason.SUPERSEDED))
    return out, replace(state, held=fire, held_slot=slot)


def _duplicate(fire: TriggerFired, state: NudgeState) -> Decision | None:
    if any(use.trigger_id == fire.trigger_id for use in state.used):
        return Decision(fire, Verdict.ACT, duplicate=True)
    if state.held is not None and state.held.trigger_id == fire.trigger_id:
        return Decision(fire, Verdict.HOLD, duplicate=True)
    return None


def _one(
    fire: TriggerFired,
    state: NudgeState,
    config: NudgeConfig,
    *,
    now: float,
    run_in_progress: bool,
    slot: int,
) -> tuple[list[Decision], NudgeState]:
    """Apply the rules to one fire."""
    duplicate = _duplicate(fire, state)
    if duplicate is not None:
        return [duplicate], state
    reason = _gate(fire, config, now) or _slot_conflict(fire, slot, state)
    held = state.held
    if reason is None and held is not None and priority(held.type) >= priority(fire.type):
        reason = SuppressReason.LOWER_PRIORITY
    if reason is None and _over_cap(fire, state, config):
        reason = SuppressReason.REALERT_CAP
    if reason is not None:
        return [_suppress(fire, reason)], state
    if run_in_progress:
        return _hold(fire, slot, state)
    decision, state = _act_or_cool(fire, slot, state, config, now)
    return [decision], state


def release(state: NudgeState, config: NudgeConfig, *, now: float) -> PolicyResult:
    """The run ended: decide the held fire (act or suppress) and clear it.

    :returns: no decision when nothing is held.
    """
    fire, slot = state.held, state.held_slot
    if fire is None:
        return PolicyResult((), state)
    state = replace(state, held=None, held_slot=None)
    decisions, state = _one(
        fire,
        state,
        config,
        now=now,
        run_in_progress=False,
        slot=slot if slot is not None else BEFORE_FIRST_RUN,
    )
    return PolicyResult(tuple(decisions), state)


def decide(
    fires: Sequence[TriggerFired],
    state: NudgeState,
    config: NudgeConfig,
    *,
    now: float,
    run_in_progress: bool,
    last_run_index: int | None,
) -> PolicyResult:
    """Decide the fires produced by one event (or one clock advance).

    :param fires: the fires, in any order; they are judged strongest first.
    :param state: the student's policy state.
    :param now: the clock (event time in replay, wall time live).
    :param run_in_progress: whether the student's latest run has not ended;
        if it has and a fire is still held, that fire is released first.
    :param last_run_index: the session's latest scored run (for inactive slots).
    :returns: one decision per fire (plus any release or supersede decision
        of the previously held fire) and the new state.
    """
    decisions: list[Decision] = []
    if not run_in_progress and state.held is not None:
        released = release(state, config, now=now)
        decisions += released.decisions
        state = released.state
    for fire in sorted(fires, key=lambda f: -priority(f.type)):
        made, state = _one(
            fire,
            state,
            config,
            now=now,
            run_in_progress=run_in_progress,
            slot=slot_of(fire, last_run_index),
        )
        decisions += made
    return PolicyResult(tuple(decisions), state)
