"""Inactive alerts: when an idle student's alerts fall due.

After an event at ``t0``, alert ``k`` (0, 1, 2, ...) falls due at
``t0 + 240 + 600k``.  An event at ``t1`` settles every alert strictly before
``t1``; a clock advance to ``now`` settles those at or before it.  No alert
falls due more than the recency window after the student's last event.
"""

from __future__ import annotations

from streams.config import EngineConfig


def fire_time(idle_since: float, k: int, config: EngineConfig) -> float:
    """When alert ``k`` of an idle spell that began at ``idle_since`` falls due."""
    return idle_since + config.inactive_after_s + config.inactive_realert_s * k


def due_alerts(
    idle_since: float,
    already: int,
    now: float,
    inclusive: bool,
    config: EngineConfig,
) -> list[int]:
    """Alert numbers from ``already`` on that are due at ``now``, in order."""
    due: list[int] = []
    k = already
    while True:
        at = fire_time(idle_since, k, config)
        if (at > now if inclusive else at >= now) or at - idle_since > config.recency_s:
            return due
        due.append(k)
        k += 1
