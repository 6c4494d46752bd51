"""Which feedback classes a turn uses, and the neutral behaviour facts.

* Reactive turns (a student's question): the classes follow from the
  measured work pattern and persistence; when the table yields nothing the
  turn falls back to ``{Question}``.
* Proactive turns (a fired trigger): the classes follow from the trigger
  type, and the model is told a *neutral fact* about the behaviour instead
  of the trigger's internal label.

Invariant: no fact, observation or fallback text contains an internal label
word (see :data:`BANNED_WORDS`); a unit test checks every text.
"""

from __future__ import annotations

from feedback.classes import FeedbackClass as FC
from topology.schemas.analysis import TriggerType
from topology.schemas.feedback import (
    Cognition,
    FeedbackRequest,
    Lane,
    Persistence,
    SessionMetrics,
)

#: Words that must never reach the model or the student from our own texts.
BANNED_WORDS = ("wheel", "spin", "trigger", "resilience", "explorer", "iterative", "inactive")

_BY_COGNITION: dict[Cognition, frozenset[FC]] = {
    Cognition.LONG_TERM_STALLED_PROGRESS: frozenset({FC.ERROR_FLAGGING}),
    Cognition.DEVELOPMENT_INCREASES_PROGRESS: frozenset({FC.ELABORATE}),
    Cognition.DEVELOPMENT_STATIC_PROGRESS: frozenset({FC.REASSURE}),
    Cognition.DEVELOPMENT_DECREASES_PROGRESS: frozenset({FC.INFORM}),
    Cognition.STEP_BY_STEP_ELIMINATION: frozenset({FC.NUDGE}),
    Cognition.SNAP_N_TEST: frozenset({FC.INFORM}),
}

_TRIAL_EXTRA: dict[Persistence, frozenset[FC]] = {
    Persistence.EXPECTED_COMPLETION: frozenset({FC.EVIDENCE_BASED_PRAISE}),
    Persistence.HIGH_PERSISTER: frozenset({FC.REASSURE}),
    Persistence.EARLY_QUITTER: frozenset({FC.HOW_TO}),
}

_ABANDONMENT: dict[Persistence, frozenset[FC]] = {
    Persistence.EXPECTED_COMPLETION: frozenset({FC.DIAGNOSE}),
    Persistence.EARLY_QUITTER: frozenset({FC.DIAGNOSE}),
    Persistence.HIGH_PERSISTER: frozenset({FC.REASSURE, FC.ELABORATE}),
}

REACTIVE_FALLBACK: frozenset[FC] = frozenset({FC.QUESTION})

TRIGGER_CLASSES: dict[TriggerType, frozenset[FC]] = {
    TriggerType.WHEEL_SPIN: frozenset({FC.REASSURE, FC.DIAGNOSE}),
    TriggerType.RESILIENCE: frozenset({FC.EVIDENCE_BASED_PRAISE}),
    TriggerType.EXPLORER: frozenset({FC.DIAGNOSE}),
    TriggerType.ITERATIVE: frozenset({FC.EVIDENCE_BASED_PRAISE}),
    TriggerType.INACTIVE: frozenset({FC.REASSURE, FC.QUESTION}),
}

#: Third-person facts for the model, one per trigger type.
FACTS: dict[TriggerType, str] = {
    TriggerType.WHEEL_SPIN: ("The student has run the same program several times in a row without changing any block."),
    TriggerType.RESILIENCE: ("After several runs with no change, the student has just changed the program."),
    TriggerType.EXPLORER: ("The student just changed a large part of the program in one step."),
    TriggerType.ITERATIVE: ("The student has been making small, steady changes and testing after each one."),
    TriggerType.INACTIVE: ("The student has not done anything in the editor for a few minutes."),
}

#: The fact used when a trigger type has no fact of its own.
FALLBACK_FACT = "The student may welcome a short check-in."

#: Second-person observations for the template responder, one per trigger type.
OBSERVATIONS: dict[TriggerType, str] = {
    TriggerType.WHEEL_SPIN: "You have run the same program a few times now.",
    TriggerType.RESILIENCE: "You changed your program after several runs that stayed the same.",
    TriggerType.EXPLORER: "You just made a big change to your program.",
    TriggerType.ITERATIVE: "You have been making small changes and testing each one.",
    TriggerType.INACTIVE: "It has been a few quiet minutes in the editor.",
}


def classes_for_metrics(metrics: SessionMetrics | None) -> frozenset[FC]:
    """Classes suggested by the measured pattern and persistence (may be empty).

    :returns: the union of the matching rows; empty when the pattern is
        unclassified, unknown (no progress measure) or has no row.
    """
    if metrics is None or metrics.cognition is None:
        return frozenset()
    if metrics.cognition is Cognition.TRIAL_AND_ERROR:
        extra = _TRIAL_EXTRA.get(metrics.persistence or Persistence.IN_PROGRESS, frozenset())
        return frozenset({FC.PARTIAL_CORRECTNESS}) | extra
    if metrics.cognition is Cognition.CODE_ABANDONMENT:
        return _ABANDONMENT.get(metrics.persistence or Persistence.IN_PROGRESS, frozenset())
    return _BY_COGNITION.get(metrics.cognition, frozenset())


def reactive_classes(metrics: SessionMetrics | None) -> frozenset[FC]:
    """Classes for a student's question: the metric classes, or ``{Question}``."""
    return classes_for_metrics(metrics) or REACTIVE_FALLBACK


def classes_for_trigger(trigger: TriggerType | str) -> frozenset[FC]:
    """Classes for a proactive nudge; empty for an unknown type (no message)."""
    try:
        return TRIGGER_CLASSES[TriggerType(trigger)]
    except ValueError:
        return frozenset()


def classes_for_request(request: FeedbackRequest) -> frozenset[FC]:
    """The classes of one feedback pass: by trigger (proactive) or by metrics (reactive)."""
    if request.lane is Lane.PROACTIVE:
        return classes_for_trigger(request.trigger.type) if request.trigger else frozenset()
    return reactive_classes(request.metrics)


def behaviour_fact(trigger: TriggerType | str) -> str:
    """The neutral fact the model is given for a trigger type (never its label)."""
    try:
        return FACTS[TriggerType(trigger)]
    except ValueError:
        return FALLBACK_FACT


def observation(trigger: TriggerType | str | None) -> str | None:
    """A student-facing sentence describing the behaviour; ``None`` if unknown."""
    if trigger is None:
        return None
    try:
        return OBSERVATIONS[TriggerType(trigger)]
    except ValueError:
        return None


def contains_banned_word(text: str) -> str | None:
    """The first internal label word found in ``text`` (case-insensitive), or ``None``."""
    lowered = text.lower()
    return next((w for w in BANNED_WORDS if w in lowered), None)
