"""Feedback contract: session metrics, feedback requests, chat, stored messages."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from topology.schemas.analysis import TriggerFired
from topology.schemas.base import Record


class ActionLevel(StrEnum):
    LOW = "LOW"
    MEDIUM = "MEDIUM"
    HIGH = "HIGH"


class Direction(StrEnum):
    INCREASING = "INCREASING"
    DECREASING = "DECREASING"
    STATIC = "STATIC"


class Persistence(StrEnum):
    EXPECTED_COMPLETION = "EXPECTED_COMPLETION"
    HIGH_PERSISTER = "HIGH_PERSISTER"
    EARLY_QUITTER = "EARLY_QUITTER"
    IN_PROGRESS = "IN_PROGRESS"


class Cognition(StrEnum):
    LONG_TERM_STALLED_PROGRESS = "LONG_TERM_STALLED_PROGRESS"
    DEVELOPMENT_INCREASES_PROGRESS = "DEVELOPMENT_INCREASES_PROGRESS"
    DEVELOPMENT_STATIC_PROGRESS = "DEVELOPMENT_STATIC_PROGRESS"
    DEVELOPMENT_DECREASES_PROGRESS = "DEVELOPMENT_DECREASES_PROGRESS"
    TRIAL_AND_ERROR = "TRIAL_AND_ERROR"
    CODE_ABANDONMENT = "CODE_ABANDONMENT"
    STEP_BY_STEP_ELIMINATION = "STEP_BY_STEP_ELIMINATION"
    SNAP_N_TEST = "SNAP_N_TEST"
    UNCLASSIFIED = "UNCLASSIFIED"


class SessionMetrics(Record):
    """What the feedback stage needs to know about a session, measured from
    the events up to the trigger or the question (never re-read later).

    ``progress_pct``, ``direction``, ``persistence`` and ``cognition`` are null
    when the playground has no progress measure in the catalog.
    """

    playground: str | None
    segment_events: int
    time_on_task_s: float
    action_level: ActionLevel
    progress_pct: float | None = None
    direction: Direction | None = None
    persistence: Persistence | None = None
    cognition: Cognition | None = None
    milestones_done: list[str] = []
    milestones_todo: list[str] = []
    run_count: int = 0
    post_run_pause_count: int = 0
    inactive_pause_count: int = 0
    last_error: str | None = None
    run_in_progress: bool = False


class Lane(StrEnum):
    PROACTIVE = "proactive"
    REACTIVE = "reactive"


class ChatRequest(Record):
    """A student's question (on ``vex.chat.requests``, keyed by student)."""

    schema_version: Literal[1] = 1
    request_id: str
    student_key: str
    student_id: str
    session_id: str | None = None
    """Null: the student's latest session (resolved by the analysis stage)."""
    text: str
    ts: float
    source: Literal["gateway", "cli"] = "gateway"


class FeedbackRequest(Record):
    """A self-contained request for one feedback pass (on ``vex.feedback.requests``).

    Proactive requests carry the trigger and the nudge-policy decision; a
    suppressed one is recorded and never reaches the model.  Reactive requests
    carry the question; ``canned`` names a fixed reply that needs no model.
    """

    schema_version: Literal[1] = 1
    request_id: str
    lane: Lane
    student_key: str
    student_id: str
    session_id: str
    playground: str | None
    ts: float
    trigger: TriggerFired | None = None
    decision: Literal["act", "suppress"] = "act"
    suppress_reason: str | None = None
    question: str | None = None
    chat_request_id: str | None = None
    canned: Literal["run_in_progress", "no_session"] | None = None
    metrics: SessionMetrics | None = None
    program_xml: str | None = None
    policy_version: int = 1


class FeedbackMessage(Record):
    """A stored assistant (or student) message (on ``vex.feedback``).

    ``message_id`` is the monotonic Postgres id: the SSE ``id:`` and cursor.
    """

    schema_version: Literal[1] = 1
    message_id: int
    response_id: str
    student_key: str
    session_id: str | None
    role: Literal["assistant", "student"]
    origin: Lane
    text: str
    feedback_classes: list[str] = []
    model: str | None = None
    trigger_id: str | None = None
    trigger_type: str | None = None
    trigger_detail: str | None = None
    created_at: float


class NudgeOutcome(Record):
    """What became of a trigger (on ``vex.nudge.outcomes``): for the teacher board."""

    schema_version: Literal[1] = 1
    trigger_id: str
    trigger_type: str
    student_key: str
    session_id: str
    status: Literal["pending", "acted", "suppressed", "failed"]
    reason: str | None = None
    message_id: int | None = None
    response_id: str | None = None
    at: float
