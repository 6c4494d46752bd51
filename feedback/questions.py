"""Question types of a student's message, and the small classifier prompt.

A reactive turn may first ask the model which of four kinds of question the
student asked; the answer picks the scaffolding (what to talk about) that
goes into the feedback prompt.  Parsing is forgiving: the first standalone
digit 0-3 in the answer wins, anything else means "general or unclear".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum


class QuestionType(IntEnum):
    TASK = 0
    STRATEGY = 1
    DEBUGGING = 2
    GENERAL = 3


@dataclass(frozen=True, slots=True)
class QuestionInfo:
    """How one question type is named, recognised and scaffolded."""

    title: str
    definition: str
    includes: str
    excludes: str
    scaffolding: str


QUESTIONS: dict[QuestionType, QuestionInfo] = {
    QuestionType.TASK: QuestionInfo(
        title="Understanding the task",
        definition="The student is unsure what the playground asks for or what counts as done.",
        includes='"what am I supposed to do?", "how do I get points?"',
        excludes="questions about a specific block or a robot that misbehaves",
        scaffolding=(
            "1. Restate the goal in one plain sentence.\n"
            "2. Point to one job that is not done yet.\n"
            "3. Ask what the robot should do first for that job."
        ),
    ),
    QuestionType.STRATEGY: QuestionInfo(
        title="Choosing an action or strategy",
        definition="The student knows the goal and asks how to make the robot do something.",
        includes='"how do I turn around?", "which block lifts the arm?"',
        excludes="a program that already runs but does the wrong thing",
        scaffolding=(
            "1. Name the block (from the block list) that does the step.\n"
            "2. Say where in the program it belongs.\n"
            "3. Suggest a first value to try, then to run and watch."
        ),
    ),
    QuestionType.DEBUGGING: QuestionInfo(
        title="Finding a problem",
        definition="The program runs but the robot does something unexpected, or nothing.",
        includes='"why does it stop early?", "it drives past the lab"',
        excludes="questions about what the task is",
        scaffolding=(
            "1. Compare what the student expects with what the program says.\n"
            "2. Point at the block most likely responsible (check the [Orphaned] part too).\n"
            "3. Suggest one change or one test run to check the idea."
        ),
    ),
    QuestionType.GENERAL: QuestionInfo(
        title="General or unclear",
        definition='Anything else: greetings, feelings, vague requests such as "help".',
        includes='"help", "this is hard", "hi"',
        excludes="a clear question of one of the other kinds",
        scaffolding=(
            "1. Acknowledge the message briefly.\n"
            "2. Offer one small concrete next step based on the program.\n"
            "3. Invite the student to say what they are trying to do."
        ),
    ),
}

_DIGIT = re.compile(r"(?<![0-9])([0-3])(?![0-9])")


def parse_question_type(answer: str | None) -> QuestionType:
    """The question type named by a classifier answer.

    :returns: the first standalone digit 0-3 in ``answer``; ``GENERAL`` otherwise.
    """
    match = _DIGIT.search(answer or "")
    return QuestionType(int(match.group(1))) if match else QuestionType.GENERAL


def classifier_prompt(message: str) -> str:
    """The prompt that asks the model for the question type as one digit."""
    lines = [
        "Sort a middle school student's message to a VEXcode VR coding helper into one type.",
        "",
    ]
    for qtype, info in QUESTIONS.items():
        lines += [
            f"{qtype.value}. {info.title}: {info.definition}",
            f"   For example: {info.includes}. Not: {info.excludes}.",
        ]
    lines += [
        "",
        f"Student message: {message.strip() or '(empty)'}",
        "",
        "Answer with a single digit (0, 1, 2 or 3) and nothing else.",
    ]
    return "\n".join(lines)
