"""Momentary triggers over one session's scored runs, one run at a time.

Per playground stretch (counters fresh at each stretch) and for a run with
distance ``d``, in this order: resilience (``d > 0`` after a zero streak of at
least 4), wheel_spin (the 6th zero in a row while armed; re-armed by a change),
explorer (``d >= 13``), iterative (the threshold-th change in a row while
armed; re-armed by a zero).  The first run of a stretch (null distance) and a
run whose pair was not comparable fire nothing and change no counter.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from streams.config import EngineConfig
from topology.schemas import TriggerType


@dataclass(slots=True)
class StretchCounters:
    """The counters of the current playground stretch of one session."""

    zero_streak: int = 0
    wheel_armed: bool = True
    iter_count: int = 0
    iter_armed: bool = True
    recent: list[int | None] = field(default_factory=list)

    def to_json(self) -> list[object]:
        return [self.zero_streak, self.wheel_armed, self.iter_count, self.iter_armed, self.recent]

    @classmethod
    def from_json(cls, raw: list[object]) -> StretchCounters:
        zero, wheel, count, armed, recent = raw
        return cls(int(zero), bool(wheel), int(count), bool(armed), list(recent))  # type: ignore[call-overload]


@dataclass(frozen=True, slots=True)
class Fire:
    """A momentary fire on one run, before ids and times are attached."""

    type: TriggerType
    detail: str
    threshold: float
    zero_streak: int
    iter_count: int


def score_run(
    counters: StretchCounters,
    distance: int | None,
    playground: str | None,
    config: EngineConfig,
) -> list[Fire]:
    """Apply one run's distance to the stretch counters; return its fires in order."""
    counters.recent.append(distance)
    del counters.recent[: -config.recent_distances]
    if distance is None:
        return []
    fires: list[Fire] = []
    if distance > 0 and counters.zero_streak >= config.resilience_zero_runs:
        fires.append(
            _fire(
                TriggerType.RESILIENCE,
                f"recovered after {counters.zero_streak} reruns",
                config.resilience_zero_runs,
                counters,
            )
        )
    if distance == 0:
        counters.zero_streak += 1
        if counters.zero_streak >= config.wheel_spin_zero_runs and counters.wheel_armed:
            counters.wheel_armed = False
            fires.append(
                _fire(
                    TriggerType.WHEEL_SPIN,
                    f"{counters.zero_streak} identical reruns",
                    config.wheel_spin_zero_runs,
                    counters,
                )
            )
    else:
        counters.zero_streak = 0
        counters.wheel_armed = True
    if distance >= config.explorer_edit_distance:
        fires.append(_fire(TriggerType.EXPLORER, f"changed {distance}", config.explorer_edit_distance, counters))
    if distance > 0:
        counters.iter_count += 1
        threshold = config.iterative_threshold(playground)
        if counters.iter_count >= threshold and counters.iter_armed:
            counters.iter_armed = False
            fires.append(_fire(TriggerType.ITERATIVE, f"{counters.iter_count} steady edits", threshold, counters))
    else:
        counters.iter_count = 0
        counters.iter_armed = True
    return fires


def _fire(kind: TriggerType, detail: str, threshold: float, counters: StretchCounters) -> Fire:
    return Fire(kind, detail, threshold, counters.zero_streak, counters.iter_count)
