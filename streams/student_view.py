"""The student view of a summary (``students[]`` of the golden files).

The rules of runs, momentary triggers, inactivity, episodes and pauses applied
to each student's merged stream, all sessions together: a student's first run
of a new session is compared with the last run of the previous one when the
playground is the same.  The pipeline analyses and publishes per session, so
this view is computed from the normalized events it published, by the same
engine fed the student's events as one stream.  Pure.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from streams.config import EngineConfig
from streams.local import LocalAnalyzer
from streams.summary import _UNSCORED, Observed, _counts, _event_id, _trigger_row
from topology.schemas import NormalizedEvent, TriggerType

#: The session id the merged stream is analysed under (never one of the input's).
MERGED = "\x00student"


def student_view(obs: Observed, config: EngineConfig, scorer: Any, horizon: float) -> list[dict[str, Any]]:
    """One row per student key, sorted; ``scorer`` None: a default
    :class:`~streams.scoring.TreeEditScorer`."""
    if scorer is None:
        from streams.scoring import TreeEditScorer

        scorer = TreeEditScorer()
    students: dict[str, list[NormalizedEvent]] = defaultdict(list)
    for event in obs.events:
        students[event.student_key].append(event)
    return [_student(key, students[key], config, scorer, horizon) for key in sorted(students)]


def _student(
    key: str, events: list[NormalizedEvent], config: EngineConfig, scorer: Any, horizon: float
) -> dict[str, Any]:
    analyzer, merged = LocalAnalyzer(config, scorer), Observed()
    for event in events:
        for output in analyzer.on_event(event.model_copy(update={"session_id": MERGED})):
            merged.add(output)
    for output in analyzer.finish(horizon):
        merged.add(output)
    runs = sorted(merged.runs, key=lambda r: r.run_index)
    by_index = {r.run_index: r for r in runs}
    by_id = {e.event_id: e for e in events}
    unscored = []
    for dead in merged.dead:
        found = by_id.get(dead.event_id or "")
        if dead.reason.value in _UNSCORED and found is not None:
            after = max((r.run_index for r in runs if r.ts <= found.ts), default=None)
            unscored.append(
                {
                    "event_id": _event_id(found.event_id),
                    "ts": found.ts,
                    "reason": dead.reason.value,
                    "after_run_index": after,
                }
            )
    last = max(e.ts for e in events)
    trailing = {
        t.trigger_id
        for t in merged.triggers
        if t.type is TriggerType.INACTIVE and (t.evidence.idle_since_ts or 0.0) >= last
    }
    momentary = sorted((t for t in merged.triggers if t.run_index is not None), key=lambda t: t.run_index or 0)
    return {
        "student_key": key,
        "sessions": sorted({e.session_id for e in events}),
        "n_events": len(events),
        "runs": [
            {
                "index": r.run_index,
                "ts": r.ts,
                "event_id": _event_id(r.event_id),
                "playground": r.playground,
                "edit_distance": r.edit_distance,
            }
            for r in runs
        ],
        "unscored_runs": unscored,
        "triggers": [_trigger_row(t, by_index) for t in momentary],
        "episodes": [
            {"type": e.type.value, "start_ts": e.start_ts, "end_ts": e.end_ts, "event_count": e.event_count}
            for e in sorted(merged.episodes, key=lambda e: e.start_idx)
        ],
        "pauses": [
            {"type": p.type.value, "after_idx": p.after_idx, "start_ts": p.start_ts, "duration": p.duration}
            for p in sorted(merged.pauses, key=lambda p: p.after_idx)
        ],
        "trigger_counts": _counts(merged.triggers, trailing),
    }
