"""The situation model: a few measured lines about where the student stands.

Built deterministically from :class:`~topology.schemas.SessionMetrics` and
the playground's milestone labels.  Invariants:

* plain sentences only: no raw events, no internal enum names, no internal
  trigger label words;
* playgrounds without a progress measure still get every line that does not
  need progress (time on task, runs, pauses, the last error);
* the robot's last error message is quoted verbatim.
"""

from __future__ import annotations

from feedback.catalogs import progress_spec
from topology.schemas.feedback import Cognition, Direction, Persistence, SessionMetrics

_TREND = {
    Direction.INCREASING: "and going up",
    Direction.DECREASING: "and going down",
    Direction.STATIC: "and holding steady",
}

_PATTERN = {
    Cognition.LONG_TERM_STALLED_PROGRESS: ("has worked for a long time with little change in progress"),
    Cognition.DEVELOPMENT_INCREASES_PROGRESS: "is making changes that raise progress",
    Cognition.DEVELOPMENT_STATIC_PROGRESS: "keeps editing, but progress is not moving",
    Cognition.DEVELOPMENT_DECREASES_PROGRESS: "made recent changes that lowered progress",
    Cognition.TRIAL_AND_ERROR: "is making many quick changes and re-running to see what happens",
    Cognition.CODE_ABANDONMENT: "took out code that had been raising progress",
    Cognition.STEP_BY_STEP_ELIMINATION: "is taking pieces out one at a time to find a problem",
    Cognition.SNAP_N_TEST: "is adding one block at a time and testing after each",
}

_PERSISTENCE = {
    Persistence.EXPECTED_COMPLETION: "is at or close to finishing the task",
    Persistence.HIGH_PERSISTER: "keeps at it even though progress is still low",
    Persistence.EARLY_QUITTER: "shows signs of stopping early",
}


def _times(n: int, one: str, many: str) -> str:
    return one if n == 1 else f"{n} {many}"


def _progress_lines(metrics: SessionMetrics) -> list[str]:
    if metrics.progress_pct is None:
        return []
    trend = _TREND.get(metrics.direction or Direction.STATIC, "")
    lines = [f"Progress on the task: {metrics.progress_pct:.0f}% {trend}."]
    spec = progress_spec(metrics.playground)
    if spec is not None:
        if metrics.milestones_done:
            done = ", ".join(spec.label(k) for k in metrics.milestones_done)
            lines.append(f"Jobs already done: {done}.")
        if metrics.milestones_todo:
            todo = ", ".join(spec.label(k) for k in metrics.milestones_todo)
            lines.append(f"Jobs not done yet: {todo}.")
    return lines


def _time_line(metrics: SessionMetrics) -> str:
    minutes = metrics.time_on_task_s / 60.0
    spent = "less than a minute" if minutes < 1 else f"about {minutes:.0f} min"
    runs = (
        "no runs of the program yet"
        if metrics.run_count == 0
        else _times(metrics.run_count, "1 run of the program", "runs of the program") + " so far"
    )
    return f"Time on this playground: {spent}, with {runs}."


def _behaviour_lines(metrics: SessionMetrics) -> list[str]:
    lines = []
    if metrics.cognition is not None and metrics.cognition in _PATTERN:
        lines.append(f"Work pattern: the student {_PATTERN[metrics.cognition]}.")
    if metrics.persistence is not None and metrics.persistence in _PERSISTENCE:
        lines.append(f"Persistence: the student {_PERSISTENCE[metrics.persistence]}.")
    return lines


def _pause_lines(metrics: SessionMetrics) -> list[str]:
    lines = []
    if metrics.post_run_pause_count > 0:
        count = _times(metrics.post_run_pause_count, "once", "times")
        lines.append(f"After a run, the student stopped to watch the result {count}.")
    if metrics.inactive_pause_count > 0:
        count = _times(metrics.inactive_pause_count, "one long break", "long breaks")
        lines.append(f"The student took {count} of five minutes or more.")
    return lines


def build_situation(metrics: SessionMetrics | None) -> str:
    """The situation model text, one fact per line.

    :param metrics: the measured session state (``None`` when unknown).
    :returns: the lines joined by newlines; ``""`` when nothing was measured
        (no metrics, or no event and no run).
    """
    if metrics is None or (metrics.segment_events == 0 and metrics.run_count == 0):
        return ""
    lines = _progress_lines(metrics)
    lines.append(_time_line(metrics))
    lines += _behaviour_lines(metrics)
    lines += _pause_lines(metrics)
    if metrics.last_error:
        lines.append(f"Most recent error the robot reported: {metrics.last_error}")
    return "\n".join(lines)
