"""The golden-file shape of a replay: per session runs, fires, alerts, episodes.

Built from what the pipeline published (normalized events, scored runs,
triggers, episodes, pauses, dead letters), so a replay can be diffed against
a golden file by any tool.  Every key of the golden files is there:
``semantics`` states the constants in force, ``boundary_cases`` lists the gaps
within a second of a threshold, and ``students`` is the extra per-student view
(:mod:`streams.student_view`; the pipeline publishes per session, so that view
is computed from the published events with the same cores).  Pure.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from streams.config import EngineConfig
from streams.timeutil import iso_utc
from topology.schemas import (
    DeadLetter,
    EpisodeClosed,
    FeedbackRequest,
    NormalizedEvent,
    PauseDetected,
    RunScored,
    TriggerFired,
    TriggerType,
)

GOLDEN_VERSION = 2
SEMANTICS_VERSION = "v2"
#: iterative counts the runs whose distance is above this.
ITERATIVE_EDIT_MIN = 0
_UNSCORED = {"no_project", "project_not_json", "project_not_object", "workspace_not_string", "xml_error"}


def stream_order(event: NormalizedEvent) -> tuple[float, int, int, int]:
    """The order of events inside a stream (fixtures README §2)."""
    line = event.source.line if event.source is not None and event.source.line is not None else 0
    if event.envelope_id_int is not None:
        return (event.ts, 0, event.envelope_id_int, line)
    return (event.ts, 1, 0, line)


@dataclass
class Observed:
    """Everything one replay observed, grouped as it arrives."""

    events: list[NormalizedEvent] = field(default_factory=list)
    runs: list[RunScored] = field(default_factory=list)
    triggers: list[TriggerFired] = field(default_factory=list)
    episodes: list[EpisodeClosed] = field(default_factory=list)
    pauses: list[PauseDetected] = field(default_factory=list)
    dead: list[DeadLetter] = field(default_factory=list)
    requests: list[FeedbackRequest] = field(default_factory=list)

    def in_stream_order(self) -> Observed:
        """A copy whose events are in stream order — (time, integer envelope id first,
        file line) — whatever order they arrived in (a stable sort: ties keep arrival order)."""
        events = sorted(self.events, key=stream_order)
        return dataclasses.replace(self, events=events)

    def add(self, record: object) -> None:
        """File a record under its kind (unknown kinds are ignored)."""
        for kind, bucket in (
            (NormalizedEvent, self.events),
            (RunScored, self.runs),
            (TriggerFired, self.triggers),
            (EpisodeClosed, self.episodes),
            (PauseDetected, self.pauses),
            (DeadLetter, self.dead),
            (FeedbackRequest, self.requests),
        ):
            if isinstance(record, kind):
                cast(list[object], bucket).append(record)
                return


def _event_id(event_id: str) -> int | str:
    return int(event_id) if event_id.isdigit() else event_id


def _counts(triggers: Iterable[TriggerFired], trailing: set[str]) -> dict[str, int]:
    c: Counter[str] = Counter()
    for t in triggers:
        c[t.type.value] += 1
        if t.type is TriggerType.INACTIVE:
            c["inactive_first" if t.alert == 0 else "inactive_realert"] += 1
            c["inactive_trailing"] += int(t.trigger_id in trailing)
    keys = (
        "wheel_spin",
        "resilience",
        "explorer",
        "iterative",
        "inactive",
        "inactive_first",
        "inactive_realert",
        "inactive_trailing",
    )
    return {k: c[k] for k in keys}


def _run_row(run: RunScored, event: NormalizedEvent | None) -> dict[str, Any]:
    return {
        "index": run.run_index,
        "ts": run.ts,
        "timestamp": run.timestamp,
        "received_at": event.received_at if event else None,
        "event_id": _event_id(run.event_id),
        "playground": run.playground,
        "edit_distance": run.edit_distance,
        "workspace_status": run.workspace_status,
        "n_blocks": run.n_blocks,
        "n_stacks": run.n_stacks,
        "label_tree_size": run.label_tree_size,
    }


def _unscored_row(dead: DeadLetter, event: NormalizedEvent, after: int | None) -> dict[str, Any]:
    return {
        "event_id": _event_id(event.event_id),
        "ts": event.ts,
        "timestamp": event.timestamp,
        "received_at": event.received_at,
        "playground": event.playground,
        "reason": dead.reason.value,
        "after_run_index": after,
    }


def _trigger_row(t: TriggerFired, runs: dict[int, RunScored]) -> dict[str, Any]:
    run = runs.get(t.run_index) if t.run_index is not None else None
    return {
        "type": t.type.value,
        "run_index": t.run_index,
        "ts": t.ts,
        "timestamp": t.timestamp,
        "playground": t.playground,
        "edit_distance": run.edit_distance if run else None,
        "detail": t.detail,
    }


def _inactive_row(t: TriggerFired, student_times: Sequence[float]) -> dict[str, Any]:
    since = t.evidence.idle_since_ts or 0.0
    resolved = next((ts for ts in student_times if ts > since), None)
    k = t.alert or 0
    return {
        "type": "inactive",
        "fired_at_ts": t.ts,
        "fired_at": t.timestamp,
        "alert": k,
        "run_index_sentinel": -1 - k,
        "idle_since_ts": since,
        "idle_since": iso_utc(since),
        "resolved_at_ts": resolved,
        "trailing": resolved is None,
    }


def _episode_row(e: EpisodeClosed) -> dict[str, Any]:
    return {
        "type": e.type.value,
        "start_ts": e.start_ts,
        "end_ts": e.end_ts,
        "start": iso_utc(e.start_ts),
        "end": iso_utc(e.end_ts),
        "event_count": e.event_count,
        "start_idx": e.start_idx,
        "end_idx": e.end_idx,
        "soft_count": e.soft_count,
    }


def _pause_row(p: PauseDetected) -> dict[str, Any]:
    return {
        "type": p.type.value,
        "after_idx": p.after_idx,
        "start_ts": p.start_ts,
        "end_ts": p.end_ts,
        "start": iso_utc(p.start_ts),
        "duration": p.duration,
    }


def _trailing(obs: Observed, times: dict[str, list[float]]) -> set[str]:
    """Inactive alerts after their student's last event (no later event resolves them)."""
    return {
        t.trigger_id
        for t in obs.triggers
        if t.type is TriggerType.INACTIVE and (t.evidence.idle_since_ts or 0.0) >= max(times.get(t.student_key, [0.0]))
    }


def _session(
    key: tuple[str, str],
    obs: Observed,
    student_times: Sequence[float],
    trailing: set[str],
) -> dict[str, Any]:
    events = [e for e in obs.events if (e.student_key, e.session_id) == key]
    by_id = {e.event_id: e for e in events}
    runs = sorted((r for r in obs.runs if (r.student_key, r.session_id) == key), key=lambda r: r.run_index)
    run_by_index = {r.run_index: r for r in runs}
    fires = [t for t in obs.triggers if (t.student_key, t.session_id) == key]
    momentary = sorted((t for t in fires if t.run_index is not None), key=lambda t: t.run_index or 0)
    idle = sorted((t for t in fires if t.type is TriggerType.INACTIVE), key=lambda t: t.ts)
    unscored = []
    for d in obs.dead:
        event = by_id.get(d.event_id or "")
        if d.reason.value in _UNSCORED and event is not None and (d.student_key, d.session_id) == key:
            after = max((r.run_index for r in runs if r.ts <= event.ts), default=None)
            unscored.append(_unscored_row(d, event, after))
    first, last = events[0], events[-1]
    return {
        "student_id": first.student_id,
        "session_id": key[1],
        "n_events": len(events),
        "event_types": dict(sorted(Counter(e.event_type for e in events).items())),
        "first_ts": first.ts,
        "last_ts": last.ts,
        "first": first.timestamp,
        "last": last.timestamp,
        "playgrounds": sorted({str(r.playground) for r in runs}),
        "runs": [_run_row(r, by_id.get(r.event_id)) for r in runs],
        "unscored_runs": unscored,
        "triggers": [_trigger_row(t, run_by_index) for t in momentary],
        "inactive": [_inactive_row(t, student_times) for t in idle],
        "episodes": [
            _episode_row(e)
            for e in sorted(
                (e for e in obs.episodes if (e.student_key, e.session_id) == key), key=lambda e: e.start_idx
            )
        ],
        "pauses": [
            _pause_row(p)
            for p in sorted((p for p in obs.pauses if (p.student_key, p.session_id) == key), key=lambda p: p.after_idx)
        ],
        "trigger_counts": _counts(fires, trailing),
    }


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def semantics(config: EngineConfig) -> dict[str, Any]:
    """The rules and constants a summary was computed under (``semantics`` of the golden files)."""
    from tree_edit.distance import COSTS

    after, every = _number(config.inactive_after_s), _number(config.inactive_realert_s)
    return {
        "version": SEMANTICS_VERSION,
        "constants": {
            "WHEEL_SPIN_ZERO_RUNS": config.wheel_spin_zero_runs,
            "RESILIENCE_ZERO_RUNS": config.resilience_zero_runs,
            "INACTIVE_TRIGGER_SECONDS": after,
            "RE_ALERT_SECONDS": every,
            "EXPLORER_EDIT_DISTANCE": config.explorer_edit_distance,
            "ITERATIVE_EDIT_MIN": ITERATIVE_EDIT_MIN,
            "ITERATIVE_DEFAULT_THRESHOLD": config.iterative_default_threshold,
            "ITERATIVE_THRESHOLDS": dict(sorted(config.iterative_thresholds.items())),
            "PAUSE_THRESHOLD_S": config.pause_threshold_s,
            "SHORT_PAUSE_MIN_S": config.short_pause_min_s,
            "PAUSE_MAX_S": config.pause_max_s,
        },
        "edit_costs": dict(COSTS),
        "time_field": "the event's own timestamp (raw_message.timestamp, ISO-8601); epoch seconds in *_ts",
        "order_within_stream": "time, then envelope id (integer ids first), then line number",
        "session_key": "(studentID, sessionID) as sent, case-sensitive",
        "student_key": "studentID trimmed and lower-cased",
        "edit_distance": "ordered tree edit distance between the ROOT-wrapped workspace trees at the costs "
        "above; a block's label is its type and fields (shadow fields included); ids and "
        "positions do not count",
        "unusable_workspace": "a runProject whose project or workspace cannot be read is not a run "
        "(unscored_runs); an empty or missing workspace is an empty program",
        "inactive_rule": f"per student over all sessions: alerts at t0+{after}+{every}*k while strictly "
        "before the next event, and at or before the horizon after the last; each "
        "belongs to the session of the event at t0",
        "inactive_op": "gt",
    }


def boundary_cases(obs: Observed, config: EngineConfig, horizon: float | None) -> list[dict[str, Any]]:
    """Gaps within a second of a threshold, where a rule's ``>`` or ``>=`` decides
    (informational).  Per student (merged): a gap near an inactive alert time
    (``inactive_fire_k``), and the horizon near a trailing alert time
    (``inactive_trailing_k``); per session: a gap near the short-pause minimum
    (``short_pause``) or the pause threshold (``inactive_pause``)."""
    after, every = config.inactive_after_s, config.inactive_realert_s
    rows: list[dict[str, Any]] = []

    def near(first: NormalizedEvent, gap: float, name: str, value: float) -> None:
        if abs(gap - value) < 1.0:
            rows.append(
                {
                    "student_id": first.student_id,
                    "session_id": first.session_id,
                    "after_ts": first.ts,
                    "after": first.timestamp,
                    "gap": gap,
                    "boundary": name,
                    "value": _number(value),
                }
            )

    def alerts(first: NormalizedEvent, gap: float, kind: str) -> None:
        k = 0
        while after + every * k < gap + 1.0:
            near(first, gap, f"{kind}_{k}", after + every * k)
            k += 1

    students: dict[str, list[NormalizedEvent]] = defaultdict(list)
    sessions: dict[tuple[str, str], list[NormalizedEvent]] = defaultdict(list)
    for e in obs.events:
        students[e.student_key].append(e)
        sessions[(e.student_key, e.session_id)].append(e)
    for events in students.values():
        ordered = sorted(events, key=lambda e: e.ts)
        for first, second in zip(ordered, ordered[1:], strict=False):  # consecutive pairs
            alerts(first, second.ts - first.ts, "inactive_fire")
        if horizon is not None:
            alerts(ordered[-1], horizon - ordered[-1].ts, "inactive_trailing")
    for events in sessions.values():
        ordered = sorted(events, key=lambda e: e.ts)
        for first, second in zip(ordered, ordered[1:], strict=False):  # consecutive pairs
            near(first, second.ts - first.ts, "short_pause", config.short_pause_min_s)
            near(first, second.ts - first.ts, "inactive_pause", config.pause_threshold_s)
    return sorted(rows, key=lambda r: (r["student_id"], r["after_ts"], r["boundary"]))


def build_summary(
    obs: Observed,
    *,
    input_name: str,
    input_sha256: str,
    input_report: dict[str, Any],
    config: EngineConfig | None = None,
    scorer: Any = None,
) -> dict[str, Any]:
    """The golden-shaped summary of one replay, under ``config`` (the engine's
    constants; v2 by default); ``scorer`` scores the student view's runs (a
    :class:`~streams.scoring.TreeEditScorer` by default)."""
    from streams.student_view import student_view

    config = config or EngineConfig()
    obs = obs.in_stream_order()
    order: dict[tuple[str, str], NormalizedEvent] = {}
    times: dict[str, list[float]] = defaultdict(list)
    for e in obs.events:
        order.setdefault((e.student_key, e.session_id), e)
        times[e.student_key].append(e.ts)
    keys = sorted(order, key=lambda k: (order[k].student_id, order[k].ts))
    trailing = _trailing(obs, times)
    sessions = [_session(k, obs, sorted(times[k[0]]), trailing) for k in keys]
    horizon = max((e.ts for e in obs.events), default=None)
    return {
        "golden_version": GOLDEN_VERSION,
        "input": input_name,
        "input_sha256": input_sha256,
        "semantics": semantics(config),
        "input_report": input_report,
        "horizon_ts": horizon,
        "horizon": iso_utc(horizon) if horizon is not None else None,
        "n_students": len(times),
        "n_sessions": len(sessions),
        "n_unscored_runs": sum(len(s["unscored_runs"]) for s in sessions),
        "trigger_counts": _counts(obs.triggers, trailing),
        "boundary_cases": boundary_cases(obs, config, horizon),
        "sessions": sessions,
        "students": student_view(obs, config, scorer, horizon) if horizon is not None else [],
    }
