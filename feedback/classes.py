"""The feedback classes and how the prompt describes each one.

A feedback class names *how* a message helps (praise, a hint, a question…).
Every class has a spec: the name the prompt uses, a description, one or two
examples and optional notes.  Unlike the reference, ``Neutral`` has a spec
too, so no class is ever dropped from a prompt without a trace.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class FeedbackClass(StrEnum):
    """The fifteen feedback classes; the value is the stored name."""

    POSITIVE_FEEDBACK = "Positive Feedback"
    PARTIAL_CORRECTNESS = "Partial Correctness"
    CORRECTIVE_GUIDANCE = "Corrective Guidance"
    EVIDENCE_BASED_PRAISE = "Evidence-based Praise"
    REASSURE = "Reassure"
    NEUTRAL = "Neutral"
    ERROR_FLAGGING = "Error Flagging"
    HOW_TO = "How To"
    INFORM = "Inform"
    NUDGE = "Nudge"
    DIAGNOSE = "Diagnose"
    QUESTION = "Question"
    ELABORATE = "Elaborate"
    REPEAT = "Repeat"
    NEXT_STEP = "Next Step"


@dataclass(frozen=True, slots=True)
class ClassSpec:
    """How one feedback class is explained to the model."""

    prompt_name: str
    description: str
    examples: tuple[str, ...]
    notes: str | None = None


SPECS: dict[FeedbackClass, ClassSpec] = {
    FeedbackClass.POSITIVE_FEEDBACK: ClassSpec(
        "Positive Feedback",
        "Confirm that an action was fully right and say briefly why it works. Keep praise modest.",
        ("Your `turn for` of 90 degrees points the robot straight at the lab, so the next drive lines up.",),
    ),
    FeedbackClass.PARTIAL_CORRECTNESS: ClassSpec(
        "Partial Correctness",
        "Start with the part that works, then name one or two things to fix.",
        ("The robot reaches the crater now; the `drive for` after it still stops short of the lab.",),
    ),
    FeedbackClass.CORRECTIVE_GUIDANCE: ClassSpec(
        "Corrective Guidance",
        "Say plainly that something is not right and how to fix it.",
        ("The arm never lifts because its motor block moves it down; change that block's direction to up.",),
    ),
    FeedbackClass.EVIDENCE_BASED_PRAISE: ClassSpec(
        "Evidence-Based Praise",
        "Praise one specific decision that the telemetry shows paid off.",
        ("Adding the `wait` before the arm moved made the pickup work every time.",),
        "Only praise what the measurements or the program actually show.",
    ),
    FeedbackClass.REASSURE: ClassSpec(
        "Reassure",
        "Lower frustration: say that getting stuck is normal and that the effort counts.",
        ("Tuning a robot takes many tries, and each run tells you something new.",),
    ),
    FeedbackClass.NEUTRAL: ClassSpec(
        "Neutral",
        "State an observation about the program or the robot plainly, without judging it.",
        ("Your program has two stacks, and only the one under `when started` runs.",),
        "No praise and no criticism; just the observation.",
    ),
    FeedbackClass.ERROR_FLAGGING: ClassSpec(
        "Error Flagging",
        "Point out the exact problem without giving away the fix.",
        ("The `drive for` block is not attached to `when started`, so it never runs.",),
        "Name the problem only; let the student work out the repair.",
    ),
    FeedbackClass.HOW_TO: ClassSpec(
        "How To",
        "Give small, concrete steps for doing one thing.",
        ("Drag `turn for` under your `drive for`, then set it to 90 degrees.",),
    ),
    FeedbackClass.INFORM: ClassSpec(
        "Inform",
        "Share one useful fact about a VEXcode VR block or robot part.",
        ("The eye sensor only sees objects that are close to the front of the robot.",),
    ),
    FeedbackClass.NUDGE: ClassSpec(
        "Hint",
        "Steer attention toward the part of the program to look at, without saying what to change.",
        ("Take another look at the distance in your second `drive for`.",),
        "Keep it subtle; do not give the answer.",
    ),
    FeedbackClass.DIAGNOSE: ClassSpec(
        "Encourage Testing (Diagnose)",
        "Get the student to run and watch the robot to find where it goes wrong.",
        ("Run it once more and watch which block is running when the robot stops.",),
    ),
    FeedbackClass.QUESTION: ClassSpec(
        "Question",
        "Ask one purposeful question that makes the student think about the next step.",
        ("What do you expect the robot to do right after it reaches the crater?",),
    ),
    FeedbackClass.ELABORATE: ClassSpec(
        "Elaborate",
        "Explain a bit more of why something works, in small pieces.",
        ("`repeat until` keeps checking its condition, so the robot stops as soon as the sensor sees the sample.",),
    ),
    FeedbackClass.REPEAT: ClassSpec(
        "Remind",
        "Restate the goal the student is working toward.",
        ("Remember, each finished job is a point, and five points wins the match.",),
    ),
    FeedbackClass.NEXT_STEP: ClassSpec(
        "Next Step",
        "Name one immediate action to take. Use this when nothing gentler has worked.",
        ("Attach the loose `drive for` under `when started` and run again.",),
    ),
}


def spec_for(cls: FeedbackClass) -> ClassSpec:
    """The prompt spec of a feedback class (every class has one)."""
    return SPECS[cls]


def sorted_classes(classes: Iterable[FeedbackClass]) -> list[FeedbackClass]:
    """Classes in a stable order (by prompt name), duplicates removed."""
    return sorted(set(classes), key=lambda c: (SPECS[c].prompt_name, c.value))


def stored_value(classes: Iterable[FeedbackClass]) -> str | None:
    """The stored form: sorted class values joined by ``", "``; ``None`` if empty."""
    values = sorted({c.value for c in classes})
    return ", ".join(values) if values else None
