"""Topic names of the pipeline (logical names; ``Settings.topic`` adds the prefix).

Every keyed topic has the same partition count (``TOPIC_PARTITIONS``) so that
a student's events, clock ticks, questions and table changelogs co-partition.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TopicSpec:
    """A topic of the contract: its logical name, key and value schema."""

    name: str
    key: str
    value: str
    compacted: bool = False


RAW = TopicSpec("vex.telemetry.raw", "student key (best effort) or none", "raw telemetry envelope bytes")
EVENTS = TopicSpec("vex.events", "student key", "NormalizedEvent v1")
REKEYED = TopicSpec("vex.events.rekeyed", "student key",
                    "NormalizedEvent v1 (internal: events whose raw line sat on another partition than its student's)")
DEADLETTER = TopicSpec("vex.deadletter", "student key or none", "DeadLetter v1")
CLOCK = TopicSpec("vex.clock", "none (sent to an explicit partition)", "ClockTick v1")
RUNS = TopicSpec("vex.runs", "student key", "RunScored v1")
TRIGGERS = TopicSpec("vex.triggers", "student key", "TriggerFired v1")
EPISODES = TopicSpec("vex.episodes", "student key", "EpisodeClosed v1 | PauseDetected v1")
CHAT_REQUESTS = TopicSpec("vex.chat.requests", "student key", "ChatRequest v1")
FEEDBACK_REQUESTS = TopicSpec("vex.feedback.requests", "student key", "FeedbackRequest v1")
FEEDBACK = TopicSpec("vex.feedback", "student key", "FeedbackMessage v1")
NUDGE_OUTCOMES = TopicSpec("vex.nudge.outcomes", "student key", "NudgeOutcome v1")

ALL_TOPICS: tuple[TopicSpec, ...] = (
    RAW, EVENTS, REKEYED, DEADLETTER, CLOCK, RUNS, TRIGGERS, EPISODES,
    CHAT_REQUESTS, FEEDBACK_REQUESTS, FEEDBACK, NUDGE_OUTCOMES,
)

#: What the stream agent consumes for the analysis, in the order to wait for
#: them: a raw line keyed by its student is analysed where it is read; any other
#: accepted line is re-keyed onto ``vex.events.rekeyed`` while the raw topic is
#: consumed.  "The analysis is done with the input" = the worker's group has
#: committed both (then ``vex.clock`` for the final tick of a replay).
ANALYSIS_INPUTS: tuple[TopicSpec, ...] = (RAW, REKEYED)
