"""In-process analysis of a whole telemetry file: ingest + engine, no broker.

The same cores the Faust agents run, driven in a loop: useful for research
(re-running history), for the admin tick's one-off evaluation, and as the
oracle the broker tests are compared with.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from feedback.nudge import NudgeConfig
from streams.config import EngineConfig
from streams.dedupe import Verdict, check, duplicate_of, remember, window_of
from streams.engine import Output, StudentEngine
from streams.ingest import Rejected, SeenIds, decode_line, is_blank
from streams.programs import DictMetricLog, DictProgramStore, Scorer
from streams.replayclock import ReplayClock
from streams.screen import DEFAULT_LIMITS, Limits
from streams.state import StudentState
from streams.summary import Observed
from topology.partitioning import partition_for
from topology.schemas import NormalizedEvent


@dataclass
class LocalRun:
    """Result of an in-process analysis."""

    observed: Observed = field(default_factory=Observed)
    report: dict[str, Any] = field(default_factory=dict)
    sha256: str = ""


class LocalAnalyzer:
    """Students' engines in one process, fed events in arrival order."""

    def __init__(
        self,
        config: EngineConfig,
        scorer: Scorer,
        nudge: NudgeConfig | None = None,
        partitions: int | None = None,
    ) -> None:
        """``partitions``: follow replay mode's per-partition event-time watermark
        (:class:`~streams.replayclock.ReplayClock`, as the worker does; None:
        students advance only by their own events)."""
        self.config, self.scorer, self.nudge, self.partitions = config, scorer, nudge, partitions
        self.states: dict[str, StudentState] = {}
        self.programs: dict[str, DictProgramStore] = {}
        self.metric_logs: dict[str, DictMetricLog] = {}
        self.clock = ReplayClock()

    def engine(self, student_key: str) -> StudentEngine:
        state = self.states.get(student_key)
        if state is None:
            state = self.states[student_key] = StudentState(student_key)
            self.programs[student_key] = DictProgramStore()
            self.metric_logs[student_key] = DictMetricLog(self.config.max_metric_events)
        return StudentEngine(
            state, self.config, self.scorer, self.programs[student_key], self.nudge, self.metric_logs[student_key]
        )

    def on_event(self, event: NormalizedEvent, line: int | None = None) -> list[Output]:
        out = self.engine(event.student_key).offer(event, line)
        if self.partitions:
            out += self._follow_watermark(event)
        return out

    def _follow_watermark(self, event: NormalizedEvent) -> list[Output]:
        """Replay mode: advance the partition's other due students to its watermark."""
        assert self.partitions is not None
        part = partition_for(event.student_key, self.partitions)
        step = self.clock.observe(part, event.ts)
        if not step.follow:
            return []
        out: list[Output] = []
        for key in sorted(self.states):
            if key == event.student_key or partition_for(key, self.partitions) != part:
                continue
            engine = self.engine(key)
            due = engine.next_tick(live=False)
            if due is not None and due <= step.mark:
                out += engine.tick(step.mark, inclusive=False)
        return out

    def finish(self, horizon: float) -> list[Output]:
        """Advance every student to the horizon (inclusive) and close episodes."""
        out: list[Output] = []
        for key in sorted(self.states):
            out += self.engine(key).tick(horizon, inclusive=True, final=True)
        return out


class LineAnalyzer:
    """Raw lines to outputs one at a time, as the pipeline treats them: blank
    lines skipped, each line decoded, a student's repeated event id rejected,
    every accepted event analysed."""

    def __init__(self, analyzer: LocalAnalyzer, limits: Limits = DEFAULT_LIMITS) -> None:
        self.analyzer, self.limits = analyzer, limits
        self.seen: dict[str, SeenIds] = {}
        self.rejected: Counter[str] = Counter()
        self.blank = 0

    def feed(self, line: bytes, number: int | None = None) -> tuple[NormalizedEvent | None, list[Output]]:
        """The line's accepted event (None if blank or rejected) and its outputs.

        :param number: the line's number in its file (stream order's last tie-break).
        """
        if is_blank(line):
            self.blank += 1
            return None, []
        out = decode_line(line, limits=self.limits)
        student = window_of(out)
        seen = None if student is None else self.seen.get(student)
        if check(out, seen) is Verdict.DUPLICATE:
            out = duplicate_of(out)
        if isinstance(out, Rejected):
            self.rejected[out.reason.value] += 1
            return None, []
        if student is not None:
            remember(self.seen.setdefault(student, SeenIds()), out)
        return out, self.analyzer.on_event(out, number)


def analyze_lines(
    lines: Iterable[bytes],
    config: EngineConfig,
    scorer: Scorer,
    nudge: NudgeConfig | None = None,
    partitions: int | None = None,
    limits: Limits = DEFAULT_LIMITS,
    numbers: Sequence[int] | None = None,
) -> LocalRun:
    """Ingest and analyze raw lines exactly as the pipeline does (replay mode).

    :param numbers: each line's number in its file when ``lines`` are not in file
        order (a replay of disordered arrival); default 1, 2, 3, …
    """
    run, analyzer = LocalRun(), LocalAnalyzer(config, scorer, nudge, partitions)
    reader = LineAnalyzer(analyzer, limits)
    digest, total = hashlib.sha256(), 0
    for index, line in enumerate(lines):
        digest.update(line + b"\n")
        total += 1
        event, outputs = reader.feed(line, numbers[index] if numbers is not None else index + 1)
        if event is None:
            continue
        run.observed.add(event)
        for record in outputs:
            run.observed.add(record)
    if run.observed.events:
        for record in analyzer.finish(max(e.ts for e in run.observed.events)):
            run.observed.add(record)
    run.sha256 = digest.hexdigest()
    run.report = {
        "lines": total,
        "blank_lines": reader.blank,
        "accepted": len(run.observed.events),
        "rejected": dict(sorted(reader.rejected.items())),
    }
    return run


def read_lines(data: bytes) -> list[bytes]:
    """Split a file's bytes into lines (a final newline ends the last line)."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


@dataclass
class SessionEvaluation:
    """One evaluation pass over a stored session: what fired and what to send."""

    triggers: list[Any] = field(default_factory=list)
    runs: list[Any] = field(default_factory=list)
    requests: list[Any] = field(default_factory=list)


def evaluate_session(
    events: Iterable[NormalizedEvent],
    settings: Any,
    *,
    now: float | None = None,
    scorer: Scorer | None = None,
) -> SessionEvaluation:
    """Run the engine and the nudge policy over one session's stored events.

    The same cores as the stream, from a fresh state; the clock ends at ``now``
    (the latest event when None), so inactive alerts up to then are included.
    Every request carries an id derived from its trigger, so handing them to
    the (idempotent) feedback service never repeats what the stream already sent.
    """
    from streams.scoring import TreeEditScorer

    analyzer = LocalAnalyzer(
        EngineConfig.from_settings(settings),
        scorer or TreeEditScorer.from_settings(settings),
        NudgeConfig.from_settings(settings),
    )
    result, last = SessionEvaluation(), None
    outputs: list[Output] = []
    for event in events:
        outputs += analyzer.on_event(event)
        last = event.ts if last is None else max(last, event.ts)
    if last is not None:
        outputs += analyzer.finish(now if now is not None else last)
    observed = Observed()
    for record in outputs:
        observed.add(record)
    result.triggers, result.runs, result.requests = observed.triggers, observed.runs, observed.requests
    return result
