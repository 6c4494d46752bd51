"""The feedback prompt: golden snapshots and the rules behind them."""

from __future__ import annotations

from pathlib import Path

import pytest

from feedback.classes import FeedbackClass
from feedback.policy import behaviour_fact, contains_banned_word
from feedback.prompt import (
    NO_BLOCKS,
    NO_PROGRAM,
    build_prompt,
    fill,
    prompt_inputs,
    render_prompt,
)
from feedback.questions import QuestionType, classifier_prompt, parse_question_type
from feedback.situation import build_situation
from topology.schemas.analysis import TriggerType
from topology.schemas.feedback import Lane

from .prompt_cases import CHAT, METRICS, PROACTIVE, REACTIVE, TRIGGER

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "prompts"


def golden(name: str) -> str:
    return (GOLDEN / name).read_text(encoding="utf-8").removesuffix("\n")


def test_golden_proactive_prompt() -> None:
    assert build_prompt(PROACTIVE, chat=CHAT) == golden("proactive_wheel.txt")


def test_golden_reactive_prompt() -> None:
    prompt = build_prompt(REACTIVE, chat=CHAT, question_type=QuestionType.DEBUGGING)
    assert prompt == golden("reactive_debugging.txt")


def test_prompt_is_deterministic_and_types_sorted() -> None:
    inputs = prompt_inputs(
        PROACTIVE, classes={FeedbackClass.REASSURE, FeedbackClass.DIAGNOSE, FeedbackClass.NEUTRAL, FeedbackClass.NUDGE}
    )
    text = render_prompt(inputs)
    listed = text.split("Feedback types to use:\n")[1].split("\n\n")[0].splitlines()
    assert listed == ["- Encourage Testing (Diagnose)", "- Hint", "- Neutral", "- Reassure"]
    assert text == render_prompt(
        prompt_inputs(
            PROACTIVE,
            classes=[FeedbackClass.NUDGE, FeedbackClass.NEUTRAL, FeedbackClass.DIAGNOSE, FeedbackClass.REASSURE],
        )
    )


def test_proactive_situation_ends_with_the_fact_and_hides_the_label() -> None:
    inputs = prompt_inputs(PROACTIVE)
    assert inputs.situation == build_situation(METRICS) + "\n\n" + behaviour_fact(TriggerType.WHEEL_SPIN)
    assert inputs.message == "" and inputs.question_type is None
    text = build_prompt(PROACTIVE, question_type=QuestionType.TASK)  # ignored when proactive
    assert "None (no student question; this is a proactive check-in)" in text
    lowered = text.lower()
    for word in ("wheel", "trigger", "resilience", "explorer", "iterative", "inactive"):
        assert word not in lowered
    assert TRIGGER.detail not in text and TRIGGER.trigger_id not in text


@pytest.mark.parametrize("kind", list(TriggerType))
def test_every_trigger_type_prompt_has_its_fact_and_classes(kind: TriggerType) -> None:
    request = PROACTIVE.model_copy(update={"trigger": TRIGGER.model_copy(update={"type": kind})})
    text = build_prompt(request)
    assert behaviour_fact(kind) in text
    situation = text.split("telemetry):\n")[1].split("\n\nRecent chat")[0]
    assert contains_banned_word(situation) is None


def test_proactive_without_metrics_is_the_fact_alone() -> None:
    request = PROACTIVE.model_copy(update={"metrics": None})
    assert prompt_inputs(request).situation == behaviour_fact(TriggerType.WHEEL_SPIN)


def test_reactive_defaults() -> None:
    request = REACTIVE.model_copy(
        update={"question": "   ", "metrics": None, "program_xml": None, "playground": "RoverRescue"}
    )
    inputs = prompt_inputs(request)
    assert inputs.message == "Help" and inputs.question_type is QuestionType.GENERAL
    assert inputs.classes == (FeedbackClass.QUESTION,)
    text = render_prompt(inputs)
    assert f"Blocks the student can use:\n{NO_BLOCKS}\n" in text
    assert f"never run):\n{NO_PROGRAM}\n" in text
    assert "What is happening now (measured from the robot's telemetry):\nNothing measured yet.\n" in text
    assert "Recent chat:\nNone\n" in text
    assert "Mars" not in text.split("Blocks the student")[0]


def test_reactive_uses_the_metric_classes() -> None:
    assert prompt_inputs(REACTIVE).classes == (FeedbackClass.PARTIAL_CORRECTNESS,)


def test_chat_keeps_the_last_six_turns_with_capitalized_roles() -> None:
    chat = [("student" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(9)] + [("student", "  ")]
    text = build_prompt(REACTIVE, chat=chat)
    section = text.split("Recent chat:\n")[1].split("\n\n")[0].splitlines()
    assert section == [
        "Assistant: turn 3",
        "Student: turn 4",
        "Assistant: turn 5",
        "Student: turn 6",
        "Assistant: turn 7",
        "Student: turn 8",
    ]


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("Task: {task}", "Task: T"),
        ("{task} {unknown} {", "T {unknown} {"),
        ("{{task}}", "{T}"),
        ("} {task {task}", "} {task T"),
        ("{message}", "has {task} inside"),
        ("{Task}", "{Task}"),
    ],
)
def test_fill_tolerates_stray_braces(template: str, expected: str) -> None:
    assert fill(template, {"task": "T", "message": "has {task} inside"}) == expected


def test_researcher_template_with_braces() -> None:
    template = "Say {message} using {feedback_types}; keep {this} and }{ as is."
    text = render_prompt(prompt_inputs(REACTIVE), template)
    assert text == (
        "Say why doesnt my arm move {it just sits there} using - Partial Correctness; keep {this} and }{ as is."
    )


def test_lane_enum_is_respected() -> None:
    assert PROACTIVE.lane is Lane.PROACTIVE and REACTIVE.lane is Lane.REACTIVE


@pytest.mark.parametrize(
    ("answer", "qtype"),
    [
        ("2", QuestionType.DEBUGGING),
        (" 0\n", QuestionType.TASK),
        ("Type: 1.", QuestionType.STRATEGY),
        ("12", QuestionType.GENERAL),
        ("4", QuestionType.GENERAL),
        ("", QuestionType.GENERAL),
        (None, QuestionType.GENERAL),
        ("I think 3 or 1", QuestionType.GENERAL),
        ("answer 1 then 2", QuestionType.STRATEGY),
    ],
)
def test_parse_question_type(answer: str | None, qtype: QuestionType) -> None:
    assert parse_question_type(answer) is qtype


def test_classifier_prompt_lists_four_types() -> None:
    text = classifier_prompt("why does it stop")
    for digit in "0123":
        assert f"\n{digit}. " in text
    assert "Student message: why does it stop" in text
    assert classifier_prompt("  ").count("(empty)") == 1
