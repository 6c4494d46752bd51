"""The deterministic template responder."""

from __future__ import annotations

import itertools
import re

import pytest

from feedback.catalogs import block_name
from feedback.classes import FeedbackClass
from feedback.length import enforce_length, split_sentences, word_count
from feedback.policy import TRIGGER_CLASSES, contains_banned_word
from feedback.render import program_block_types
from feedback.sanitize import sanitize
from feedback.templates import (
    lead_class,
    program_blocks,
    template_for_request,
    template_reply,
)
from topology.schemas.analysis import TriggerType

from .prompt_cases import PROACTIVE, PROGRAM, REACTIVE

FC = FeedbackClass
NS = 'xmlns="https://developers.google.com/blockly/xml"'

PROGRAMS = {
    "example": PROGRAM,
    "none": None,
    "broken": "<xml",
    "only_hat": f'<xml {NS}><block type="pg_events_when_started"/></xml>',
    "only_orphans": f'<xml {NS}><block type="pg_drivetrain_turn_for"/></xml>',
    "only_arm": (
        f'<xml {NS}><block type="pg_events_when_started"><next><block type="iq_motion_spin_for"/></next></block></xml>'
    ),
    "unknown_types": f'<xml {NS}><block type="pg_events_when_started"><next>'
    '<block type="mystery_block"/></next></block></xml>',
}
TRIGGERS: list[TriggerType | None] = [None, *TriggerType]
CLASS_SETS = (
    [frozenset({c}) for c in FC]
    + [frozenset(pair) for pair in itertools.combinations(FC, 2)]
    + list(TRIGGER_CLASSES.values())
    + [frozenset()]
)


def _named_blocks(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


@pytest.mark.parametrize("program", list(PROGRAMS), ids=list(PROGRAMS))
@pytest.mark.parametrize("trigger", TRIGGERS, ids=lambda t: str(t))
def test_every_reply_is_clean_short_and_grounded(program: str, trigger: TriggerType | None) -> None:
    xml = PROGRAMS[program]
    names = {block_name(t) for t in program_block_types(xml)}
    for classes in CLASS_SETS:
        text = template_reply(classes, program_xml=xml, trigger=trigger)
        assert text, classes
        assert sanitize(text) == text, text
        assert enforce_length(text) == text, text
        assert word_count(text) <= 40 and len(split_sentences(text)) <= 2, text
        assert contains_banned_word(text) is None, text
        assert set(_named_blocks(text)) <= names, text


def test_proactive_reply_names_a_real_block() -> None:
    text = template_reply({FC.REASSURE, FC.DIAGNOSE}, program_xml=PROGRAM, trigger=TriggerType.WHEEL_SPIN)
    assert text == (
        "You have run the same program a few times now. "
        "Run it once more and watch what the robot does during `drive for`."
    )


def test_error_flagging_names_the_unattached_block() -> None:
    xml = PROGRAMS["example"].replace("iq_motion_spin_for", "pg_drivetrain_stop_driving")
    text = template_reply({FC.ERROR_FLAGGING}, program_xml=xml)
    assert text == "Your `stop driving` block is not attached to a start block, so it never runs."


def test_blocks_with_label_words_or_hats_are_never_named() -> None:
    blocks = program_blocks(PROGRAMS["only_arm"])
    assert blocks.live == () and blocks.unattached == ()
    text = template_reply({FC.NUDGE}, program_xml=PROGRAMS["only_arm"])
    assert text == "Take another look at the numbers in your program."


def test_program_blocks_split_live_and_unattached() -> None:
    blocks = program_blocks(PROGRAM)
    assert blocks.live == ("drive for", "turn for")
    assert blocks.unattached == ()  # the loose arm block's name has a label word


@pytest.mark.parametrize(
    ("classes", "lead"),
    [
        ({FC.REASSURE, FC.DIAGNOSE}, FC.DIAGNOSE),
        ({FC.QUESTION, FC.REASSURE}, FC.QUESTION),
        ({FC.EVIDENCE_BASED_PRAISE}, FC.EVIDENCE_BASED_PRAISE),
        (set(), None),
        ({FC.NEUTRAL, FC.ERROR_FLAGGING}, FC.ERROR_FLAGGING),
    ],
)
def test_lead_class(classes: set[FeedbackClass], lead: FeedbackClass | None) -> None:
    assert lead_class(classes) is lead


def test_no_classes_and_no_trigger_gives_the_fallback() -> None:
    text = template_reply(set())
    assert text == "Try one small change to your program, then run it and watch what happens."


def test_deterministic() -> None:
    a = template_reply({FC.QUESTION, FC.REASSURE}, program_xml=PROGRAM, trigger="inactive")
    b = template_reply([FC.REASSURE, FC.QUESTION], program_xml=PROGRAM, trigger=TriggerType.INACTIVE)
    assert a == b


def test_for_requests() -> None:
    assert template_for_request(PROACTIVE) == template_reply(
        {FC.REASSURE, FC.DIAGNOSE}, program_xml=PROGRAM, trigger=TriggerType.WHEEL_SPIN
    )
    reactive = template_for_request(REACTIVE)
    assert reactive == "Part of your program already works, so now check the values in `drive for`."
