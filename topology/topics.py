"""Topic names of the pipeline (logical names; ``Settings.topic`` adds the prefix).

Every keyed topic has the same partition count (``TOPIC_PARTITIONS``) so that
a student's events, clock ticks, questions and table changelogs co-partition.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from topology.schemas import (
    ChatRequest,
    ClockTick,
    DeadLetter,
    EpisodeClosed,
    FeedbackMessage,
    FeedbackRequest,
    NormalizedEvent,
    NudgeOutcome,
    PauseDetected,
    RunScored,
    TriggerFired,
)
from topology.schemas.base import Record


@dataclass(frozen=True)
class TopicSpec:
    """A topic of the contract: its logical name, its key, and the record types
    of its values (the one place a topic's type is declared; none = raw bytes)."""

    name: str
    key: str
    records: tuple[type[Record], ...] = ()
    note: str = ""
    compacted: bool = False

    @property
    def value(self) -> str:
        """The value schema in words (``NormalizedEvent v1``)."""
        if not self.records:
            return self.note
        kinds = " | ".join(f"{r.__name__} v{r.model_fields['schema_version'].default}" for r in self.records)
        return f"{kinds} ({self.note})" if self.note else kinds


RAW = TopicSpec("vex.telemetry.raw", "student key (best effort) or none", note="raw telemetry envelope bytes")
EVENTS = TopicSpec("vex.events", "student key", (NormalizedEvent,))
REKEYED = TopicSpec(
    "vex.events.rekeyed",
    "student key",
    (NormalizedEvent,),
    "internal: events whose raw line sat on another partition than its student's",
)
DEADLETTER = TopicSpec("vex.deadletter", "student key or none", (DeadLetter,))
CLOCK = TopicSpec("vex.clock", "none (sent to an explicit partition)", (ClockTick,))
RUNS = TopicSpec("vex.runs", "student key", (RunScored,))
TRIGGERS = TopicSpec("vex.triggers", "student key", (TriggerFired,))
EPISODES = TopicSpec("vex.episodes", "student key", (EpisodeClosed, PauseDetected))
CHAT_REQUESTS = TopicSpec("vex.chat.requests", "student key", (ChatRequest,))
FEEDBACK_REQUESTS = TopicSpec("vex.feedback.requests", "student key", (FeedbackRequest,))
FEEDBACK = TopicSpec("vex.feedback", "student key", (FeedbackMessage,))
NUDGE_OUTCOMES = TopicSpec("vex.nudge.outcomes", "student key", (NudgeOutcome,))

ALL_TOPICS: tuple[TopicSpec, ...] = (
    RAW,
    EVENTS,
    REKEYED,
    DEADLETTER,
    CLOCK,
    RUNS,
    TRIGGERS,
    EPISODES,
    CHAT_REQUESTS,
    FEEDBACK_REQUESTS,
    FEEDBACK,
    NUDGE_OUTCOMES,
)


@functools.cache
def home_of(record: type[Record]) -> TopicSpec:
    """The topic a record type is published on: the first topic that declares it
    (the re-keyed topic is internal and comes after ``vex.events``)."""
    for spec in ALL_TOPICS:
        if record in spec.records:
            return spec
    raise TypeError(f"no topic carries {record.__name__}")


ANALYSIS_INPUTS: tuple[TopicSpec, ...] = (RAW, REKEYED)
