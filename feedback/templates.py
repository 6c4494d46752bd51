"""The template responder: a deterministic reply when no model answers.

One or two short sentences built from fixed wording per feedback class, the
behaviour observation of a proactive nudge, and the student's own program
(one real block, named with its friendly name in backticks).  Invariants,
checked by tests for every class, trigger and program shape:

* the reply passes :func:`~feedback.sanitize.sanitize` and
  :func:`~feedback.length.enforce_length` unchanged (at most two sentences,
  at most forty words);
* it never contains an internal label word; a block whose name contains one
  is not named;
* it names only blocks that are in the program.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from feedback.catalogs import block_name
from feedback.classes import FeedbackClass as FC
from feedback.policy import classes_for_request, contains_banned_word, observation
from feedback.render import HAT_TYPES, program_block_types
from topology.schemas.analysis import TriggerType
from topology.schemas.feedback import FeedbackRequest, Lane

#: Which class leads when several apply (the most actionable first).
LEAD_ORDER: tuple[FC, ...] = (
    FC.ERROR_FLAGGING,
    FC.DIAGNOSE,
    FC.NUDGE,
    FC.NEXT_STEP,
    FC.HOW_TO,
    FC.CORRECTIVE_GUIDANCE,
    FC.PARTIAL_CORRECTNESS,
    FC.EVIDENCE_BASED_PRAISE,
    FC.POSITIVE_FEEDBACK,
    FC.INFORM,
    FC.ELABORATE,
    FC.REPEAT,
    FC.QUESTION,
    FC.REASSURE,
    FC.NEUTRAL,
)

#: Per class: (sentence naming a block, sentence without a block).
_SENTENCES: dict[FC, tuple[str, str]] = {
    FC.DIAGNOSE: (
        "Run it once more and watch what the robot does during `{block}`.",
        "Run it once more and watch closely where the robot stops following your plan.",
    ),
    FC.REASSURE: ("Getting stuck is a normal part of coding, and every run teaches you something.",) * 2,
    FC.ERROR_FLAGGING: (
        "Something in `{block}` may not match what you want the robot to do.",
        "Look for the first step where the robot stops matching your plan.",
    ),
    FC.ELABORATE: (
        "Blocks run from top to bottom, so where `{block}` sits decides when that step happens.",
        "Blocks run from top to bottom, so their order decides what the robot does first.",
    ),
    FC.INFORM: (
        "Only blocks attached under a start block run, so check where `{block}` is attached.",
        "Only blocks attached under a start block run, in order from top to bottom.",
    ),
    FC.PARTIAL_CORRECTNESS: (
        "Part of your program already works, so now check the values in `{block}`.",
        "Part of your program already works, so change one thing at a time.",
    ),
    FC.EVIDENCE_BASED_PRAISE: ("Changing one thing and testing it is a smart way to work.",) * 2,
    FC.POSITIVE_FEEDBACK: ("Keep the parts that work and change one thing at a time.",) * 2,
    FC.HOW_TO: (
        "Move `{block}` to the spot where the robot should do that step, then run again.",
        "Drag the block you need under the step before it, then run again.",
    ),
    FC.NUDGE: (
        "Take another look at the values in `{block}`.",
        "Take another look at the numbers in your program.",
    ),
    FC.NEXT_STEP: (
        "Change one value in `{block}` and run the program again.",
        "Change one value in your program and run it again.",
    ),
    FC.CORRECTIVE_GUIDANCE: (
        "Check `{block}`, because its settings may not match your plan.",
        "Check each block's settings against your plan for the robot.",
    ),
    FC.QUESTION: (
        "What do you want the robot to do right after `{block}`?",
        "What do you want the robot to do first?",
    ),
    FC.REPEAT: ("Remember the goal: pick one job and get the robot to finish it.",) * 2,
    FC.NEUTRAL: (
        "Your program currently runs `{block}`.",
        "Your program is ready for another run.",
    ),
}

_UNATTACHED = "Your `{block}` block is not attached to a start block, so it never runs."
_FALLBACK = "Try one small change to your program, then run it and watch what happens."


@dataclass(frozen=True, slots=True)
class ProgramBlocks:
    """Friendly names of the program's blocks that a template may mention."""

    live: tuple[str, ...]
    unattached: tuple[str, ...]


def _nameable(types: list[str]) -> tuple[str, ...]:
    names = [block_name(t) for t in types if t not in HAT_TYPES]
    return tuple(n for n in dict.fromkeys(names) if "`" not in n and not contains_banned_word(n))


def program_blocks(xml: str | None) -> ProgramBlocks:
    """The blocks of a workspace a template can name (hats and label words excluded)."""
    live_types = program_block_types(xml, active_only=True)
    all_types = program_block_types(xml)
    unattached = [t for t in all_types if t not in live_types]
    return ProgramBlocks(_nameable(live_types), _nameable(unattached))


def lead_class(classes: Collection[FC]) -> FC | None:
    """The class a template leads with (``None`` for no classes)."""
    return next((c for c in LEAD_ORDER if c in classes), None)


def _sentence(cls: FC, blocks: ProgramBlocks) -> str:
    if cls is FC.ERROR_FLAGGING and blocks.unattached:
        return _UNATTACHED.format(block=blocks.unattached[0])
    with_block, without = _SENTENCES[cls]
    pick = blocks.live[0] if blocks.live else None
    return with_block.format(block=pick) if pick else without


def template_reply(
    classes: Collection[FC],
    *,
    program_xml: str | None = None,
    trigger: TriggerType | str | None = None,
) -> str:
    """A deterministic reply for the given classes.

    :param classes: the feedback classes of the pass (any order).
    :param program_xml: the student's workspace; a block from it may be named.
    :param trigger: the trigger type of a proactive nudge (its observation leads).
    :returns: one or two sentences, at most forty words.
    """
    blocks = program_blocks(program_xml)
    ordered = [c for c in LEAD_ORDER if c in classes]
    sentences: list[str] = []
    seen = observation(trigger)
    if seen:
        sentences.append(seen)
    for cls in ordered:
        text = _sentence(cls, blocks)
        if text not in sentences:
            sentences.append(text)
        if len(sentences) == 2:
            break
    if not sentences:
        sentences.append(_FALLBACK)
    return " ".join(sentences)


def template_for_request(request: FeedbackRequest) -> str:
    """The template reply for a feedback request (classes derived as for the model)."""
    trigger = request.trigger.type if request.lane is Lane.PROACTIVE and request.trigger else None
    return template_reply(classes_for_request(request), program_xml=request.program_xml, trigger=trigger)
