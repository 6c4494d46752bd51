"""Analysis contract: scored runs, triggers, episodes, pauses, clock ticks."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from topology.schemas.base import Record


class TriggerType(StrEnum):
    """The five behaviours worth a nudge (internal labels: never shown to students)."""

    WHEEL_SPIN = "wheel_spin"
    RESILIENCE = "resilience"
    EXPLORER = "explorer"
    ITERATIVE = "iterative"
    INACTIVE = "inactive"


class EpisodeType(StrEnum):
    CODE = "CODE"
    RUN = "RUN"
    RESET = "RESET"


class PauseType(StrEnum):
    INACTIVE_PAUSE = "INACTIVE_PAUSE"
    POST_RUN_PAUSE = "POST_RUN_PAUSE"


class RunScored(Record):
    """One scored ``runProject`` of a session (on ``vex.runs``).

    ``edit_distance`` is null for the first run of a playground stretch and
    when the pair is not comparable (``comparable`` false: over the size guard).
    """

    schema_version: Literal[1] = 1
    student_key: str
    student_id: str
    session_id: str
    run_index: int
    event_id: str
    ts: float
    timestamp: str
    playground: str | None
    edit_distance: int | None
    comparable: bool = True
    workspace_status: Literal["ok", "empty_workspace"]
    n_blocks: int
    n_stacks: int
    label_tree_size: int
    late: bool = False
    """The run arrived later than the reorder window allows: analysed in arrival order,
    at its student's latest time (fixtures README §2)."""


class TriggerEvidence(Record):
    """Why a trigger fired: the numbers behind it (for analysts and teachers)."""

    recent_distances: list[int | None] = []
    """The stretch's distances up to and including the firing run (last 10)."""
    edit_distance: int | None = None
    zero_streak: int | None = None
    iterative_count: int | None = None
    threshold: float | None = None
    """The threshold applied (runs, distance or seconds, per type)."""
    idle_since_ts: float | None = None
    idle_s: float | None = None


class TriggerFired(Record):
    """One fire, on ``vex.triggers``.  ``trigger_id`` is derived from
    (student, session, type, run index or alert number), so a re-delivered or
    replayed fire carries the same id and every consumer can drop duplicates.
    """

    schema_version: Literal[1] = 1
    trigger_id: str
    type: TriggerType
    student_key: str
    student_id: str
    session_id: str
    run_index: int | None
    """The firing run (momentary types); null for inactive."""
    alert: int | None
    """The alert number k (inactive only; 0 = first alert of an idle spell)."""
    ts: float
    """Fire time: the run's time, or idle_since + 240 + 600k for inactive."""
    timestamp: str
    playground: str | None
    event_id: str | None
    """The firing run's event id; for inactive, the last event before the idle spell."""
    detail: str
    """Short text: "6 identical reruns", "recovered after 5 reruns", "changed 14"…"""
    trailing: bool = False
    """Inactive only: fired after the student's last event seen so far."""
    evidence: TriggerEvidence
    late: bool = False
    """Fired by a run that arrived later than the reorder window allows."""


class EpisodeClosed(Record):
    """A finished CODE / RUN / RESET episode of a session (on ``vex.episodes``)."""

    schema_version: Literal[1] = 1
    kind: Literal["episode"] = "episode"
    student_key: str
    session_id: str
    type: EpisodeType
    start_idx: int
    end_idx: int
    start_ts: float
    end_ts: float
    event_count: int
    soft_count: int
    late: bool = False
    """Closed by an event that arrived later than the reorder window allows."""


class PauseDetected(Record):
    """An INACTIVE_PAUSE or POST_RUN_PAUSE of a session (on ``vex.episodes``)."""

    schema_version: Literal[1] = 1
    kind: Literal["pause"] = "pause"
    student_key: str
    session_id: str
    type: PauseType
    after_idx: int
    start_ts: float
    end_ts: float
    duration: float
    late: bool = False
    """Closed by an event that arrived later than the reorder window allows."""


class ClockTick(Record):
    """A clock advance for every student of one partition (on ``vex.clock``).

    ``now`` is epoch seconds.  ``final`` marks the end of a replayed input:
    alerts due at ``now`` fire (inclusive) and open episodes are closed.
    """

    schema_version: Literal[1] = 1
    now: float
    final: bool = False
    source: Literal["wall", "replay"] = "wall"
