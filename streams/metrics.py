"""Current-state metrics of a session: what the feedback stage measures.

Pure and deterministic: :func:`compute_metrics` reads a sequence of compact
:class:`MetricEvent` records (the session's events in stream order) and
returns one :class:`~topology.schemas.SessionMetrics`.

The measures follow the reference agent's current-state snapshot, with three
deliberate corrections (see ``docs/feedback.md``):

* the segment starts at the **latest** switch event of the current
  playground, not the earliest one;
* the quick-test rule counts only an edit made **before** the last run
  (``0 <= run - edit <= 90 s``); the reference used a signed difference, so
  any edit made after the run passed;
* a playground without a progress table yields null progress, direction,
  persistence and cognition instead of an error.

Kept as specified although questionable: time on task is the wall span
(idle gaps included); the action level counts every event type; the
direction compares the two halves of the time span; the score is capped at
5 points; the step-by-step elimination rule sits after the "progress going
up" rule, so it can never match.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from feedback.catalogs import ProgressSpec, canonical_playground, progress_spec
from topology.schemas.feedback import (
    ActionLevel,
    Cognition,
    Direction,
    Persistence,
    SessionMetrics,
)

RUN_START = "runProject"
BLOCK_MOVED = "blockMoved"
BLOCK_DELETED = "blockDeleted"
EDIT_EVENTS = frozenset({"blockCreated", "blockChanged", "blockDeleted", "blockMoved"})
SWITCH_EVENTS = frozenset({"PlaygroundChange", "playgroundOpen", "menuSelect"})

APM_LOW_BELOW = 1.5
APM_MEDIUM_UP_TO = 3.5
DIRECTION_STEP = 5.0
QUICK_TEST_WINDOW_S = 90.0
STALLED_AFTER_S = 600.0
STATIC_AFTER_S = 300.0
PERSISTER_AFTER_S = 600.0
QUITTER_WITHIN_S = 120.0


@dataclass(frozen=True, slots=True)
class MetricEvent:
    """The few facts of one telemetry event that the metrics read.

    ``playground`` is canonical (see :func:`feedback.catalogs.canonical_playground`);
    ``params`` is the ``parameters`` object of ``playgroundData`` (or ``None``);
    ``snap`` / ``unsnap`` mark a ``blockMoved`` that attached a block to a
    parent / detached it from one.  Treat ``params`` as read-only.
    """

    ts: float
    event_type: str
    playground: str | None
    params: Mapping[str, Any] | None = None
    snap: bool = False
    unsnap: bool = False
    error_message: str | None = None

    @classmethod
    def from_fields(cls, **fields: Any) -> MetricEvent:
        """Build a record from plain normalized-event values (the keywords of :meth:`record`)."""
        return cls.from_json(cls.record(**fields))

    @staticmethod
    def record(
        *,
        ts: float,
        event_type: str,
        playground: str | None,
        playground_params: Mapping[str, Any] | None = None,
        block_event: Mapping[str, Any] | None = None,
        error_message: str | None = None,
    ) -> list[Any]:
        """The JSON form (:meth:`to_json`) of the record of these values, built
        without the event: the engine stores one record per event and reads
        them back only to measure.

        :param playground: the raw playground spelling; canonicalized here.
        :param playground_params: the decoded ``playgroundData.parameters``
            (anything that is not a mapping is ignored).
        :param block_event: the decoded ``blockEventData`` (ignored unless a mapping).
        """
        moved = 0
        if event_type == BLOCK_MOVED and isinstance(block_event, Mapping):
            if _has_parent(block_event.get("newInfo")):
                moved = 1
            elif _has_parent(block_event.get("oldInfo")):
                moved = 2
        params = dict(playground_params) if isinstance(playground_params, Mapping) else None
        return [float(ts), event_type, canonical_playground(playground), params, moved, error_message or None]

    def to_json(self) -> list[Any]:
        """Compact JSON form: ``[ts, type, playground, params, moved, error]``.

        ``moved`` is 1 for a snap, 2 for an unsnap, 0 otherwise.
        """
        moved = 1 if self.snap else (2 if self.unsnap else 0)
        params = dict(self.params) if self.params is not None else None
        return [self.ts, self.event_type, self.playground, params, moved, self.error_message]

    @classmethod
    def from_json(cls, raw: Sequence[Any]) -> MetricEvent:
        """Inverse of :meth:`to_json` (the playground is canonicalized again)."""
        ts, event_type, playground, params, moved, error = raw
        return cls(
            ts=float(ts),
            event_type=event_type,
            playground=canonical_playground(playground),
            params=dict(params) if isinstance(params, Mapping) else None,
            snap=moved == 1,
            unsnap=moved == 2,
            error_message=error or None,
        )


def _has_parent(info: object) -> bool:
    return isinstance(info, Mapping) and info.get("parent") not in (None, "")


def current_segment(events: Sequence[MetricEvent]) -> list[MetricEvent]:
    """The events of the current playground stretch.

    The current playground is the last event's.  Walking back from the end,
    the segment starts just after the nearest event on another playground,
    or at the nearest switch event on the same playground, whichever comes
    first.  Events without a playground are left out.
    """
    known = [e for e in events if e.playground is not None]
    if not known:
        return []
    current = known[-1].playground
    start = 0
    for idx in range(len(known) - 1, -1, -1):
        event = known[idx]
        if event.playground != current:
            start = idx + 1
            break
        if event.event_type in SWITCH_EVENTS:
            start = idx
            break
    return known[start:]


def time_on_task(segment: Sequence[MetricEvent]) -> float:
    """Wall span of the segment in seconds (0 for fewer than two events)."""
    if len(segment) < 2:
        return 0.0
    return round(segment[-1].ts - segment[0].ts, 2)


def action_level(n_events: int, time_s: float) -> ActionLevel:
    """Events per minute (at least one minute of denominator) as a level."""
    apm = n_events / max(time_s / 60.0, 1.0)
    if apm < APM_LOW_BELOW:
        return ActionLevel.LOW
    if apm <= APM_MEDIUM_UP_TO:
        return ActionLevel.MEDIUM
    return ActionLevel.HIGH


def event_progress(params: Mapping[str, Any], spec: ProgressSpec) -> float:
    """Progress in percent shown by one event's playground parameters."""
    score = params.get(spec.score_param) if spec.score_param else None
    if not isinstance(score, int | float) or isinstance(score, bool):
        score = sum(1 for m in spec.milestones if m.is_done(params))
    capped = min(max(float(score), 0.0), float(spec.score_cap))
    return round(capped / spec.score_cap * 100.0, 2)


def progress_series(segment: Sequence[MetricEvent], spec: ProgressSpec) -> list[tuple[float, float]]:
    """``(ts, progress)`` for every segment event that carries parameters."""
    return [(e.ts, event_progress(e.params, spec)) for e in segment if e.params is not None]


def direction(series: Sequence[tuple[float, float]], start_ts: float, span_s: float) -> Direction:
    """Later half of the time span against the earlier half (±5 points).

    An empty early half counts as the first value, an empty late half as the last.
    """
    if not series:
        return Direction.STATIC
    mid = start_ts + span_s / 2.0
    early = [v for ts, v in series if ts <= mid] or [series[0][1]]
    late = [v for ts, v in series if ts > mid] or [series[-1][1]]
    delta = fmean(late) - fmean(early)
    if delta >= DIRECTION_STEP:
        return Direction.INCREASING
    if delta <= -DIRECTION_STEP:
        return Direction.DECREASING
    return Direction.STATIC


def persistence(progress: float, trend: Direction, time_s: float, level: ActionLevel) -> Persistence:
    """First matching persistence rule."""
    if progress >= 67 or (trend is Direction.INCREASING and progress >= 50):
        return Persistence.EXPECTED_COMPLETION
    if time_s >= PERSISTER_AFTER_S and level is ActionLevel.HIGH and progress < 33:
        return Persistence.HIGH_PERSISTER
    if time_s <= QUITTER_WITHIN_S and progress < 10 and level is ActionLevel.LOW:
        return Persistence.EARLY_QUITTER
    return Persistence.IN_PROGRESS


@dataclass(frozen=True, slots=True)
class PatternInputs:
    """Inputs of the pattern rules, derived once from the segment."""

    vals: tuple[float, ...]
    deltas: tuple[float, ...]
    runs: int
    snaps: int
    removals: int
    quick_test: bool


def _dedupe(values: Sequence[float]) -> tuple[float, ...]:
    out: list[float] = []
    for v in values:
        if not out or out[-1] != v:
            out.append(v)
    return tuple(out)


def _quick_test(segment: Sequence[MetricEvent]) -> bool:
    """Whether the last run came at most 90 s after the edit just before it."""
    runs = [i for i, e in enumerate(segment) if e.event_type == RUN_START]
    if not runs:
        return False
    last_run = segment[runs[-1]]
    edits = [e.ts for e in segment[: runs[-1]] if e.event_type in EDIT_EVENTS]
    return bool(edits) and 0.0 <= last_run.ts - edits[-1] <= QUICK_TEST_WINDOW_S


def pattern_inputs(segment: Sequence[MetricEvent], series: Sequence[tuple[float, float]]) -> PatternInputs:
    """Derive the pattern-rule inputs from a segment and its progress series."""
    vals = _dedupe([v for _, v in series])
    steps = [round(b - a, 2) for a, b in zip(vals, vals[1:], strict=False)]
    return PatternInputs(
        vals=vals,
        deltas=tuple(d for d in steps if abs(d) >= DIRECTION_STEP),
        runs=sum(1 for e in segment if e.event_type == RUN_START),
        snaps=sum(1 for e in segment if e.snap),
        removals=sum(1 for e in segment if e.unsnap or e.event_type == BLOCK_DELETED),
        quick_test=_quick_test(segment),
    )


def _sign_flips(deltas: Sequence[float]) -> bool:
    return any((a > 0) != (b > 0) for a, b in zip(deltas, deltas[1:], strict=False))


def _abandoned(vals: Sequence[float]) -> bool:
    """Peak at least 15 above the final value and only falling after it."""
    if len(vals) < 3:
        return False
    peak_at = vals.index(max(vals))
    after = vals[peak_at:]
    if len(after) < 2 or max(vals) - vals[-1] < 15:
        return False
    return all(b - a <= 0 for a, b in zip(after, after[1:], strict=False))


def _eliminating(shape: PatternInputs, trend: Direction) -> bool:
    vals = shape.vals
    return (
        bool(shape.deltas)
        and vals[-1] - vals[0] >= 10
        and sum(1 for d in shape.deltas if d < 0) <= 1
        and trend is Direction.INCREASING
    )


def _pattern(shape: PatternInputs, level: ActionLevel, trend: Direction, pauses: int) -> Cognition:
    """The rules that look at how progress moved and how the student edited."""
    busy = level is not ActionLevel.LOW
    if (
        level is ActionLevel.HIGH
        and shape.vals
        and max(shape.vals) - min(shape.vals) >= 10
        and _sign_flips(shape.deltas)
    ):
        return Cognition.TRIAL_AND_ERROR
    if busy and _abandoned(shape.vals):
        return Cognition.CODE_ABANDONMENT
    if busy and _eliminating(shape, trend):
        return Cognition.STEP_BY_STEP_ELIMINATION
    if shape.runs and shape.snaps and shape.removals and shape.quick_test:
        return Cognition.SNAP_N_TEST
    if shape.runs and shape.snaps and pauses >= 1 and busy:
        return Cognition.SNAP_N_TEST
    return Cognition.UNCLASSIFIED


def cognition(
    *,
    progress: float,
    trend: Direction,
    time_s: float,
    level: ActionLevel,
    shape: PatternInputs,
    post_run_pauses: int,
) -> Cognition:
    """First matching work-pattern rule."""
    if time_s >= STALLED_AFTER_S and progress < 10 and level is not ActionLevel.HIGH:
        return Cognition.LONG_TERM_STALLED_PROGRESS
    if trend is Direction.INCREASING and progress >= 10:
        return Cognition.DEVELOPMENT_INCREASES_PROGRESS
    if trend is Direction.STATIC and time_s >= STATIC_AFTER_S:
        return Cognition.DEVELOPMENT_STATIC_PROGRESS
    if trend is Direction.DECREASING and progress >= 10:
        return Cognition.DEVELOPMENT_DECREASES_PROGRESS
    return _pattern(shape, level, trend, post_run_pauses)


def _milestones(segment: Sequence[MetricEvent], spec: ProgressSpec) -> tuple[list[str], list[str]]:
    latest = next((e.params for e in reversed(segment) if e.params is not None), None)
    if latest is None:
        return [], []
    done = [m.key for m in spec.milestones if m.is_done(latest)]
    todo = [m.key for m in spec.milestones if not m.is_done(latest)]
    return done, todo


def _progress_fields(
    segment: Sequence[MetricEvent],
    spec: ProgressSpec,
    time_s: float,
    level: ActionLevel,
    post_run_pauses: int,
) -> dict[str, Any]:
    series = progress_series(segment, spec)
    progress = series[-1][1] if series else 0.0
    trend = direction(series, segment[0].ts, time_s)
    done, todo = _milestones(segment, spec)
    return {
        "progress_pct": progress,
        "direction": trend,
        "persistence": persistence(progress, trend, time_s, level),
        "cognition": cognition(
            progress=progress,
            trend=trend,
            time_s=time_s,
            level=level,
            shape=pattern_inputs(segment, series),
            post_run_pauses=post_run_pauses,
        ),
        "milestones_done": done,
        "milestones_todo": todo,
    }


def compute_metrics(
    events: Sequence[MetricEvent],
    *,
    run_count: int,
    post_run_pause_count: int,
    inactive_pause_count: int,
    run_in_progress: bool,
) -> SessionMetrics:
    """Measure the current state of a session.

    :param events: the session's events in stream order (any playgrounds).
    :param run_count: ``runProject`` events of the whole session (not only the segment).
    :param post_run_pause_count: pauses after a finished run, over the segment.
    :param inactive_pause_count: long idle pauses, over the segment.
    :param run_in_progress: whether the student's latest run has not ended.
    :returns: the metrics; with no usable event, an empty measurement
        (``segment_events=0``, ``LOW``, every progress field null).  The
        progress fields are null too when the playground has no progress table.
    """
    segment = current_segment(events)
    last_error = next((e.error_message for e in reversed(events) if e.error_message), None)
    common: dict[str, Any] = {
        "run_count": run_count,
        "post_run_pause_count": post_run_pause_count,
        "inactive_pause_count": inactive_pause_count,
        "last_error": last_error,
        "run_in_progress": run_in_progress,
    }
    if not segment:
        return SessionMetrics(
            playground=None,
            segment_events=0,
            time_on_task_s=0.0,
            action_level=ActionLevel.LOW,
            **common,
        )
    time_s = time_on_task(segment)
    level = action_level(len(segment), time_s)
    playground = segment[-1].playground
    spec = progress_spec(playground)
    extra = _progress_fields(segment, spec, time_s, level, post_run_pause_count) if spec else {}
    return SessionMetrics(
        playground=playground,
        segment_events=len(segment),
        time_on_task_s=time_s,
        action_level=level,
        **common,
        **extra,
    )
