"""The golden-file shape of a replay: per session runs, fires, alerts, episodes.

Built from what the pipeline published (normalized events, scored runs,
triggers, episodes, pauses, dead letters), so a replay can be diffed against
a golden file by any tool.  Pure.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

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
_UNSCORED = {"no_project", "project_not_json", "project_not_object", "workspace_not_string", "xml_error"}


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

    def add(self, record: object) -> None:
        """File a record under its kind (unknown kinds are ignored)."""
        for kind, bucket in ((NormalizedEvent, self.events), (RunScored, self.runs),
                             (TriggerFired, self.triggers), (EpisodeClosed, self.episodes),
                             (PauseDetected, self.pauses), (DeadLetter, self.dead),
                             (FeedbackRequest, self.requests)):
            if isinstance(record, kind):
                bucket.append(record)  # type: ignore[attr-defined]
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
    keys = ("wheel_spin", "resilience", "explorer", "iterative", "inactive",
            "inactive_first", "inactive_realert", "inactive_trailing")
    return {k: c[k] for k in keys}


def _run_row(run: RunScored, event: NormalizedEvent | None) -> dict[str, Any]:
    return {
        "index": run.run_index, "ts": run.ts, "timestamp": run.timestamp,
        "received_at": event.received_at if event else None, "event_id": _event_id(run.event_id),
        "playground": run.playground, "edit_distance": run.edit_distance,
        "workspace_status": run.workspace_status, "n_blocks": run.n_blocks,
        "n_stacks": run.n_stacks, "label_tree_size": run.label_tree_size,
    }


def _unscored_row(dead: DeadLetter, event: NormalizedEvent, after: int | None) -> dict[str, Any]:
    return {
        "event_id": _event_id(event.event_id), "ts": event.ts, "timestamp": event.timestamp,
        "received_at": event.received_at, "playground": event.playground,
        "reason": dead.reason.value, "after_run_index": after,
    }


def _trigger_row(t: TriggerFired, runs: dict[int, RunScored]) -> dict[str, Any]:
    run = runs.get(t.run_index) if t.run_index is not None else None
    return {
        "type": t.type.value, "run_index": t.run_index, "ts": t.ts, "timestamp": t.timestamp,
        "playground": t.playground, "edit_distance": run.edit_distance if run else None,
        "detail": t.detail,
    }


def _inactive_row(t: TriggerFired, student_times: Sequence[float]) -> dict[str, Any]:
    since = t.evidence.idle_since_ts or 0.0
    resolved = next((ts for ts in student_times if ts > since), None)
    k = t.alert or 0
    return {
        "type": "inactive", "fired_at_ts": t.ts, "fired_at": t.timestamp, "alert": k,
        "run_index_sentinel": -1 - k, "idle_since_ts": since, "idle_since": iso_utc(since),
        "resolved_at_ts": resolved, "trailing": resolved is None,
    }


def _episode_row(e: EpisodeClosed) -> dict[str, Any]:
    return {
        "type": e.type.value, "start_ts": e.start_ts, "end_ts": e.end_ts, "start": iso_utc(e.start_ts),
        "end": iso_utc(e.end_ts), "event_count": e.event_count, "start_idx": e.start_idx,
        "end_idx": e.end_idx, "soft_count": e.soft_count,
    }


def _pause_row(p: PauseDetected) -> dict[str, Any]:
    return {
        "type": p.type.value, "after_idx": p.after_idx, "start_ts": p.start_ts, "end_ts": p.end_ts,
        "start": iso_utc(p.start_ts), "duration": p.duration,
    }


def _trailing(obs: Observed, times: dict[str, list[float]]) -> set[str]:
    """Inactive alerts after their student's last event (no later event resolves them)."""
    return {t.trigger_id for t in obs.triggers if t.type is TriggerType.INACTIVE
            and (t.evidence.idle_since_ts or 0.0) >= max(times.get(t.student_key, [0.0]))}


def _session(
    key: tuple[str, str], obs: Observed, student_times: Sequence[float], trailing: set[str],
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
        "student_id": first.student_id, "session_id": key[1], "n_events": len(events),
        "event_types": dict(sorted(Counter(e.event_type for e in events).items())),
        "first_ts": first.ts, "last_ts": last.ts, "first": first.timestamp, "last": last.timestamp,
        "playgrounds": sorted({str(r.playground) for r in runs}),
        "runs": [_run_row(r, by_id.get(r.event_id)) for r in runs],
        "unscored_runs": unscored,
        "triggers": [_trigger_row(t, run_by_index) for t in momentary],
        "inactive": [_inactive_row(t, student_times) for t in idle],
        "episodes": [_episode_row(e) for e in sorted(
            (e for e in obs.episodes if (e.student_key, e.session_id) == key), key=lambda e: e.start_idx)],
        "pauses": [_pause_row(p) for p in sorted(
            (p for p in obs.pauses if (p.student_key, p.session_id) == key), key=lambda p: p.after_idx)],
        "trigger_counts": _counts(fires, trailing),
    }


def build_summary(
    obs: Observed, *, input_name: str, input_sha256: str, input_report: dict[str, Any],
) -> dict[str, Any]:
    """The golden-shaped summary of one replay."""
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
        "golden_version": GOLDEN_VERSION, "input": input_name, "input_sha256": input_sha256,
        "input_report": input_report, "horizon_ts": horizon,
        "horizon": iso_utc(horizon) if horizon is not None else None,
        "n_students": len(times), "n_sessions": len(sessions),
        "n_unscored_runs": sum(len(s["unscored_runs"]) for s in sessions),
        "trigger_counts": _counts(obs.triggers, trailing), "sessions": sessions,
    }
