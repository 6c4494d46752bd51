"""Versioned message schemas: the public contract of every topic.

Each record carries ``schema_version``; a reader refuses versions it does not
know (:class:`SchemaError`).  Records are JSON (UTF-8) on the wire, encoded and
decoded with :func:`encode` / :func:`decode`.  See ``docs/topics.md``.
"""

from topology.schemas.analysis import (
    ClockTick,
    EpisodeClosed,
    EpisodeType,
    PauseDetected,
    PauseType,
    RunScored,
    TriggerEvidence,
    TriggerFired,
    TriggerType,
)
from topology.schemas.base import SchemaError, decode, encode
from topology.schemas.events import (
    DeadLetter,
    NormalizedEvent,
    RawEnvelope,
    RawPayload,
    RejectReason,
    SourceRef,
)

__all__ = [
    "ClockTick",
    "DeadLetter",
    "EpisodeClosed",
    "EpisodeType",
    "NormalizedEvent",
    "PauseDetected",
    "PauseType",
    "RawEnvelope",
    "RawPayload",
    "RejectReason",
    "RunScored",
    "SchemaError",
    "SourceRef",
    "TriggerEvidence",
    "TriggerFired",
    "TriggerType",
    "decode",
    "encode",
]

from topology.schemas.feedback import (
    ActionLevel,
    ChatRequest,
    Cognition,
    Direction,
    FeedbackMessage,
    FeedbackRequest,
    Lane,
    NudgeOutcome,
    Persistence,
    SessionMetrics,
)

__all__ += [
    "ActionLevel",
    "ChatRequest",
    "Cognition",
    "Direction",
    "FeedbackMessage",
    "FeedbackRequest",
    "Lane",
    "NudgeOutcome",
    "Persistence",
    "SessionMetrics",
]
