"""Feedback classes: the snapshot table, trigger mapping, specs and neutral facts."""

from __future__ import annotations

from typing import Any

import pytest

from feedback import policy
from feedback.classes import SPECS, FeedbackClass, sorted_classes, spec_for, stored_value
from feedback.policy import (
    BANNED_WORDS,
    FALLBACK_FACT,
    REACTIVE_FALLBACK,
    behaviour_fact,
    classes_for_metrics,
    classes_for_trigger,
    contains_banned_word,
    observation,
    reactive_classes,
)
from feedback.situation import build_situation
from topology.schemas.analysis import TriggerType
from topology.schemas.feedback import ActionLevel, Cognition, Persistence, SessionMetrics

FC = FeedbackClass
C = Cognition
P = Persistence


def snapshot(cognition: Cognition | None, persistence: Persistence | None) -> SessionMetrics:
    kw: dict[str, Any] = dict(
        playground="GO-Mars",
        segment_events=3,
        time_on_task_s=60.0,
        action_level=ActionLevel.LOW,
        cognition=cognition,
        persistence=persistence,
    )
    return SessionMetrics(**kw)


ROWS: list[tuple[Cognition, Persistence, set[FeedbackClass]]] = []
for _p in Persistence:
    ROWS += [
        (C.LONG_TERM_STALLED_PROGRESS, _p, {FC.ERROR_FLAGGING}),
        (C.DEVELOPMENT_INCREASES_PROGRESS, _p, {FC.ELABORATE}),
        (C.DEVELOPMENT_STATIC_PROGRESS, _p, {FC.REASSURE}),
        (C.DEVELOPMENT_DECREASES_PROGRESS, _p, {FC.INFORM}),
        (C.STEP_BY_STEP_ELIMINATION, _p, {FC.NUDGE}),
        (C.SNAP_N_TEST, _p, {FC.INFORM}),
        (C.UNCLASSIFIED, _p, set()),
    ]
ROWS += [
    (C.TRIAL_AND_ERROR, P.IN_PROGRESS, {FC.PARTIAL_CORRECTNESS}),
    (C.TRIAL_AND_ERROR, P.EXPECTED_COMPLETION, {FC.PARTIAL_CORRECTNESS, FC.EVIDENCE_BASED_PRAISE}),
    (C.TRIAL_AND_ERROR, P.HIGH_PERSISTER, {FC.PARTIAL_CORRECTNESS, FC.REASSURE}),
    (C.TRIAL_AND_ERROR, P.EARLY_QUITTER, {FC.PARTIAL_CORRECTNESS, FC.HOW_TO}),
    (C.CODE_ABANDONMENT, P.EXPECTED_COMPLETION, {FC.DIAGNOSE}),
    (C.CODE_ABANDONMENT, P.EARLY_QUITTER, {FC.DIAGNOSE}),
    (C.CODE_ABANDONMENT, P.HIGH_PERSISTER, {FC.REASSURE, FC.ELABORATE}),
    (C.CODE_ABANDONMENT, P.IN_PROGRESS, set()),
]


@pytest.mark.parametrize(("cognition", "persistence", "expected"), ROWS)
def test_snapshot_table(cognition: Cognition, persistence: Persistence, expected: set[FeedbackClass]) -> None:
    got = classes_for_metrics(snapshot(cognition, persistence))
    assert got == expected
    assert reactive_classes(snapshot(cognition, persistence)) == (expected or {FC.QUESTION})


def test_no_flags_gives_the_empty_set_and_the_reactive_fallback() -> None:
    assert classes_for_metrics(None) == frozenset()
    assert classes_for_metrics(snapshot(None, None)) == frozenset()
    assert reactive_classes(None) == REACTIVE_FALLBACK == {FC.QUESTION}
    assert reactive_classes(snapshot(None, None)) == {FC.QUESTION}


@pytest.mark.parametrize(
    ("trigger", "expected"),
    [
        (TriggerType.WHEEL_SPIN, {FC.REASSURE, FC.DIAGNOSE}),
        (TriggerType.RESILIENCE, {FC.EVIDENCE_BASED_PRAISE}),
        (TriggerType.EXPLORER, {FC.DIAGNOSE}),
        (TriggerType.ITERATIVE, {FC.EVIDENCE_BASED_PRAISE}),
        (TriggerType.INACTIVE, {FC.REASSURE, FC.QUESTION}),
        ("wheel_spin", {FC.REASSURE, FC.DIAGNOSE}),
        ("unknown_type", set()),
    ],
)
def test_trigger_classes(trigger: TriggerType | str, expected: set[FeedbackClass]) -> None:
    assert classes_for_trigger(trigger) == expected


def test_every_trigger_has_a_fact_and_an_observation() -> None:
    for trigger in TriggerType:
        assert behaviour_fact(trigger) == policy.FACTS[trigger]
        assert observation(trigger) == policy.OBSERVATIONS[trigger]
    assert behaviour_fact("mystery") == FALLBACK_FACT
    assert observation("mystery") is None and observation(None) is None


def test_no_internal_label_word_in_any_fact_observation_or_spec() -> None:
    texts = [*policy.FACTS.values(), FALLBACK_FACT, *policy.OBSERVATIONS.values()]
    for spec in SPECS.values():
        texts += [spec.prompt_name, spec.description, *spec.examples, spec.notes or ""]
    offenders = {t: contains_banned_word(t) for t in texts if contains_banned_word(t)}
    assert offenders == {}


def test_facts_carry_no_counts_and_do_not_claim_unchanged_blocks_for_other_types() -> None:
    for trigger, fact in policy.FACTS.items():
        assert not any(ch.isdigit() for ch in fact)
        if trigger is not TriggerType.WHEEL_SPIN:
            assert "without changing" not in fact


@pytest.mark.parametrize("word", BANNED_WORDS)
def test_banned_word_detector(word: str) -> None:
    assert contains_banned_word(f"A {word.upper()} here") == word
    assert contains_banned_word("The student ran the program.") is None


def test_every_class_has_a_spec_including_neutral() -> None:
    assert set(SPECS) == set(FeedbackClass)
    assert len(FeedbackClass) == 15
    neutral = spec_for(FC.NEUTRAL)
    assert neutral.prompt_name == "Neutral" and neutral.description and neutral.examples


@pytest.mark.parametrize(
    ("cls", "name"),
    [
        (FC.NUDGE, "Hint"),
        (FC.DIAGNOSE, "Encourage Testing (Diagnose)"),
        (FC.REPEAT, "Remind"),
        (FC.EVIDENCE_BASED_PRAISE, "Evidence-Based Praise"),
        (FC.HOW_TO, "How To"),
        (FC.QUESTION, "Question"),
    ],
)
def test_prompt_names(cls: FeedbackClass, name: str) -> None:
    assert spec_for(cls).prompt_name == name


def test_sorted_and_stored_forms_are_stable() -> None:
    classes = {FC.REASSURE, FC.DIAGNOSE, FC.QUESTION, FC.DIAGNOSE}
    assert sorted_classes(classes) == [FC.DIAGNOSE, FC.QUESTION, FC.REASSURE]
    assert stored_value(classes) == "Diagnose, Question, Reassure"
    assert stored_value([]) is None


def test_fact_appended_to_a_situation_stays_clean() -> None:
    situation = build_situation(snapshot(C.TRIAL_AND_ERROR, P.HIGH_PERSISTER))
    for trigger in TriggerType:
        assert contains_banned_word(situation + "\n\n" + behaviour_fact(trigger)) is None
