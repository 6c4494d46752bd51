"""Engine thresholds as a plain frozen value (built from Settings by adapters).

Every threshold that is a setting takes its default from the settings
(:func:`topology.settings.default`); the others are constants of the semantics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from topology.settings import default


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """The constants of the trigger and episode semantics (defaults = v2)."""

    wheel_spin_zero_runs: int = default("wheel_spin_zero_runs")
    resilience_zero_runs: int = default("resilience_zero_runs")
    explorer_edit_distance: int = default("explorer_edit_distance")
    iterative_default_threshold: int = default("iterative_default_threshold")
    iterative_thresholds: dict[str, int] = field(default_factory=lambda: dict(default("iterative_thresholds")))
    inactive_after_s: float = default("inactive_after_s")
    inactive_realert_s: float = default("inactive_realert_s")
    recency_s: float = default("trigger_student_recency_hours") * 3600.0
    pause_threshold_s: float = 300.0
    short_pause_min_s: float = 5.0
    pause_max_s: float = 86400.0
    recent_distances: int = 10
    max_metric_events: int = 400
    max_sessions: int = default("max_sessions_per_student")
    """Sessions a student's state keeps (the least recently active go first)."""
    max_state_bytes: int = default("student_state_max_bytes")
    reorder_window_s: float = default("reorder_window_s")
    """Events this much older than the student's latest are still analysed in event order."""
    """The most a student's serialized state may take (checked when a session opens)."""

    def iterative_threshold(self, playground: str | None) -> int:
        """The steady-edit count that fires iterative on ``playground``."""
        if playground is None:
            return self.iterative_default_threshold
        return self.iterative_thresholds.get(playground, self.iterative_default_threshold)

    @classmethod
    def from_settings(cls, settings: Any) -> EngineConfig:
        """Build from a :class:`topology.settings.Settings` (duck-typed: stays pure)."""
        return cls(
            wheel_spin_zero_runs=settings.wheel_spin_zero_runs,
            resilience_zero_runs=settings.resilience_zero_runs,
            explorer_edit_distance=settings.explorer_edit_distance,
            iterative_default_threshold=settings.iterative_default_threshold,
            iterative_thresholds=dict(settings.iterative_thresholds),
            inactive_after_s=settings.inactive_after_s,
            inactive_realert_s=settings.inactive_realert_s,
            recency_s=settings.trigger_student_recency_hours * 3600.0,
            max_sessions=settings.max_sessions_per_student,
            max_state_bytes=settings.student_state_max_bytes,
            reorder_window_s=settings.reorder_window_s,
        )
