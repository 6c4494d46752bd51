"""The feedback prompt: one deterministic user message per feedback pass.

Built from a :class:`~topology.schemas.FeedbackRequest`, the recent chat and
the playground catalog.  Deterministic: the same inputs give the same text
byte for byte (feedback types are sorted, never in set order).  Structure:
role, inputs (task, blocks, current program, student message, question type
and its scaffolding, measured situation, recent chat, feedback types and
their specs), instructions, output rules.

Proactive passes have no student message and no question type; their
situation ends with the neutral behaviour fact (never the trigger's label).
Placeholders are filled in one pass by name, so stray braces in a template
or in a value are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from feedback.catalogs import available_blocks, block_name, task_description
from feedback.classes import FeedbackClass, sorted_classes, spec_for
from feedback.policy import behaviour_fact, classes_for_request
from feedback.questions import QUESTIONS, QuestionType
from feedback.render import program_block_types, render_program
from feedback.situation import build_situation
from topology.schemas.feedback import FeedbackRequest, Lane

#: Chat turns shown to the model (most recent last).
CHAT_TURNS = 6

PROMPT_TEMPLATE = """\
You are a coding coach inside VEXcode VR, a block-based tool that middle school \
students use to program a virtual robot. Write one short message to the student.

INPUTS

Task:
{task}

Blocks the student can use:
{blocks}

Current program (what the robot runs; blocks under [Orphaned] are not attached and never run):
{program}

Student message:
{message}

Question type:
{question_type}

How to help with this kind of question:
{scaffolding}

What is happening now (measured from the robot's telemetry):
{situation}

Recent chat:
{chat}

Feedback types to use:
{feedback_types}

About each feedback type:
{feedback_specs}

INSTRUCTIONS

1. When inputs disagree, trust them in this order: the student message, the current \
program, what is happening now, the recent chat, the task, the help for the question \
type, the feedback types.
2. The question type decides what to talk about; the feedback types decide how to say it. \
Give only the next step that the recent chat has not covered yet.
3. The current program is the truth about which blocks exist. Trust the measured facts, \
but do not read them back. Mention a block only if it is in the current program. Never \
make up actions, errors, goals or progress.
4. Write for a middle schooler: simple and specific (as simple as possible, but no \
simpler) and objective. Blend all the feedback types listed into one message, leading \
with the most useful next step.
5. Do not grade the student or judge the work as a whole. Never discourage; praise \
rarely, and only for something the inputs show. Do not interrupt work that is going \
well. If the student's message is unclear, ask them to say it another way. If the \
student has struggled for a very long time, suggest asking the teacher.
6. When you name a block, put only its exact name in backticks, with the same words \
and capitals as given, for example `drive for`.

OUTPUT RULES

Write only the message itself: no labels, no explanations, no lists and no quotation \
marks. Give one bite-sized hint in 1 or 2 short sentences, about 20 to 35 words and \
never more than 40."""

NO_BLOCKS = "None provided"
NO_PROGRAM = "None available (no program snapshot yet)"
NO_MESSAGE = "None (the student did not write; this is a check-in)"
NO_QUESTION = "None (no student question; this is a proactive check-in)"
NO_SITUATION = "Nothing measured yet."
NONE = "None"
HELP = "Help"

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def fill(template: str, values: Mapping[str, str]) -> str:
    """Replace ``{name}`` for every known name, in one pass.

    Unknown names and unmatched braces are left as they are; values are
    never re-scanned, so braces inside them are safe.
    """
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


@dataclass(frozen=True, slots=True)
class PromptInputs:
    """Everything the template needs, already as text (except the classes)."""

    task: str
    blocks: tuple[str, ...]
    program: str | None
    message: str
    question_type: QuestionType | None
    situation: str
    chat: tuple[tuple[str, str], ...]
    classes: tuple[FeedbackClass, ...]


def _program_text(xml: str | None) -> str | None:
    rendered = render_program(xml)
    if rendered is None:
        return None
    names = [f"{t} = `{block_name(t)}`" for t in program_block_types(xml) if block_name(t) != t]
    if names:
        rendered += "\nBlock names to use: " + "; ".join(names)
    return rendered


def _situation_text(request: FeedbackRequest) -> str:
    situation = build_situation(request.metrics)
    if request.lane is not Lane.PROACTIVE:
        return situation
    fact = behaviour_fact(request.trigger.type) if request.trigger else behaviour_fact("")
    return f"{situation}\n\n{fact}" if situation else fact


def prompt_inputs(
    request: FeedbackRequest,
    *,
    chat: Sequence[tuple[str, str]] = (),
    question_type: QuestionType | None = None,
    classes: Collection[FeedbackClass] | None = None,
) -> PromptInputs:
    """Gather the prompt inputs of one request.

    :param chat: recent ``(role, text)`` turns, oldest first (the last six
        non-blank turns are used).
    :param question_type: the classified type of a reactive question (ignored
        for proactive requests).
    :param classes: the feedback classes; derived from the request when omitted.
    """
    proactive = request.lane is Lane.PROACTIVE
    chosen = classes if classes is not None else classes_for_request(request)
    return PromptInputs(
        task=task_description(request.playground),
        blocks=available_blocks(request.playground),
        program=_program_text(request.program_xml),
        message="" if proactive else ((request.question or "").strip() or HELP),
        question_type=None if proactive else (question_type or QuestionType.GENERAL),
        situation=_situation_text(request),
        chat=tuple((r, t) for r, t in chat if t.strip())[-CHAT_TURNS:],
        classes=tuple(sorted_classes(chosen)),
    )


def _chat_text(chat: Sequence[tuple[str, str]]) -> str:
    lines = [f"{role.strip().capitalize()}: {text.strip()}" for role, text in chat]
    return "\n".join(lines) or NONE


def _specs_text(classes: Sequence[FeedbackClass]) -> str:
    blocks = []
    for cls in classes:
        spec = spec_for(cls)
        lines = [f"{spec.prompt_name}: {spec.description}"]
        lines += [f"  Example: {example}" for example in spec.examples]
        lines.append(f"  Notes: {spec.notes or NONE}")
        blocks.append("\n".join(lines))
    return "\n".join(blocks) or NONE


def prompt_values(inputs: PromptInputs) -> dict[str, str]:
    """The placeholder values of the template."""
    qinfo = QUESTIONS[inputs.question_type] if inputs.question_type is not None else None
    return {
        "task": inputs.task,
        "blocks": "\n".join(f"- {b}" for b in inputs.blocks) or NO_BLOCKS,
        "program": inputs.program or NO_PROGRAM,
        "message": inputs.message or NO_MESSAGE,
        "question_type": qinfo.title if qinfo else NO_QUESTION,
        "scaffolding": qinfo.scaffolding if qinfo else NONE,
        "situation": inputs.situation or NO_SITUATION,
        "chat": _chat_text(inputs.chat),
        "feedback_types": "\n".join(f"- {spec_for(c).prompt_name}" for c in inputs.classes) or NONE,
        "feedback_specs": _specs_text(inputs.classes),
    }


def render_prompt(inputs: PromptInputs, template: str = PROMPT_TEMPLATE) -> str:
    """The prompt text for ``inputs`` (``template`` may be a researcher's edit)."""
    return fill(template, prompt_values(inputs))


def build_prompt(
    request: FeedbackRequest,
    *,
    chat: Sequence[tuple[str, str]] = (),
    question_type: QuestionType | None = None,
    template: str = PROMPT_TEMPLATE,
) -> str:
    """The complete prompt for one feedback pass (see :func:`prompt_inputs`)."""
    inputs = prompt_inputs(request, chat=chat, question_type=question_type)
    return render_prompt(inputs, template)
