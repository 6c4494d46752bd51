"""``generate_feedback``: one model call per pass, cleaning, canned replies, fallback."""

from __future__ import annotations

import re

import pytest

from feedback.classes import sorted_classes
from feedback.errors import (
    BadFeedbackRequest,
    EmptyAnswer,
    GuardrailRejected,
    LLMError,
    LLMUnavailable,
    ModelRejected,
)
from feedback.generate import CANNED_REPLIES, generate_feedback, label_leak
from feedback.length import word_count
from feedback.llm import LLMAnswer
from feedback.policy import classes_for_request, contains_banned_word
from feedback.prompt import build_prompt
from feedback.sanitize import clean_reply
from feedback.templates import template_for_request
from topology.schemas.analysis import TriggerType
from topology.schemas.feedback import FeedbackRequest

from .prompt_cases import CHAT, PROACTIVE, REACTIVE, TRIGGER

REPLY = "Try changing the number in your `drive for` block, then run the program again."


class StubLLM:
    """Answers from a script (a text, or an exception to raise) and records prompts."""

    def __init__(self, *answers: str | LLMError) -> None:
        self.answers = list(answers) or [REPLY]
        self.prompts: list[str] = []

    async def complete(self, prompt: str) -> LLMAnswer:
        self.prompts.append(prompt)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, LLMError):
            raise answer
        return LLMAnswer(text=answer, model="stub-model", tokens=42, seconds=0.01)


def proactive(kind: TriggerType) -> FeedbackRequest:
    trigger = TRIGGER.model_copy(update={"type": kind})
    return PROACTIVE.model_copy(update={"trigger": trigger})


def situation_section(prompt: str) -> str:
    match = re.search(r"What is happening now.*?\n(.*?)\n\nRecent chat:", prompt, re.S)
    assert match, "the prompt has a situation section"
    return match.group(1)


@pytest.mark.parametrize("request_", [PROACTIVE, REACTIVE], ids=["proactive", "reactive"])
async def test_one_model_call_with_the_built_prompt(request_: FeedbackRequest) -> None:
    llm = StubLLM()
    result = await generate_feedback(request_, chat=CHAT, llm=llm, fallback_template=False)
    assert llm.prompts == [build_prompt(request_, chat=CHAT)]
    assert result.prompt == llm.prompts[0]
    assert result.text == REPLY
    assert result.model == "stub-model"
    assert result.tokens == 42
    assert not result.used_template
    assert result.classes == tuple(sorted_classes(classes_for_request(request_)))


async def test_reply_is_sanitized_and_trimmed() -> None:
    raw = (
        '<think>hmm</think>Hint: "Try changing the number in your `drive for` block. '
        + "Then run it again and watch the robot closely. " * 6
        + '"'
    )
    result = await generate_feedback(PROACTIVE, llm=StubLLM(raw), fallback_template=False)
    assert result.text == clean_reply(raw)
    assert word_count(result.text) <= 40
    assert result.text.startswith("Try changing")


@pytest.mark.parametrize("kind", ["run_in_progress", "no_session"])
async def test_canned_replies_need_no_model(kind: str) -> None:
    request = REACTIVE.model_copy(update={"canned": kind, "metrics": None})
    llm = StubLLM()
    result = await generate_feedback(request, llm=llm, fallback_template=False)
    assert llm.prompts == []
    assert result.text == CANNED_REPLIES[kind]
    assert (result.classes, result.model, result.canned) == ((), None, kind)
    assert result.text == clean_reply(result.text)


def test_canned_run_reply_says_stop_then_ask_again() -> None:
    text = CANNED_REPLIES["run_in_progress"].lower()
    assert "stop" in text and "again" in text


@pytest.mark.parametrize(
    "error",
    [LLMUnavailable("down"), EmptyAnswer("empty"), ModelRejected("404")],
    ids=["unavailable", "empty", "rejected"],
)
async def test_fallback_to_the_template(error: LLMError) -> None:
    llm = StubLLM(error)
    result = await generate_feedback(PROACTIVE, llm=llm, fallback_template=True)
    assert len(llm.prompts) == 1
    assert result.used_template
    assert result.model == "template"
    assert result.text == clean_reply(template_for_request(PROACTIVE))
    assert result.fallback_reason is not None
    assert result.fallback_reason.startswith(type(error).__name__)


@pytest.mark.parametrize("error", [LLMUnavailable("down"), EmptyAnswer("empty")])
async def test_no_fallback_raises_the_model_error(error: LLMError) -> None:
    with pytest.raises(type(error)):
        await generate_feedback(PROACTIVE, llm=StubLLM(error), fallback_template=False)


async def test_no_model_configured() -> None:
    result = await generate_feedback(REACTIVE, llm=None, fallback_template=True)
    assert result.model == "template"
    with pytest.raises(LLMUnavailable):
        await generate_feedback(REACTIVE, llm=None, fallback_template=False)


async def test_answer_that_cleans_to_nothing_is_empty() -> None:
    with pytest.raises(EmptyAnswer):
        await generate_feedback(PROACTIVE, llm=StubLLM("<think>only thoughts"), fallback_template=False)


async def test_reply_naming_a_label_is_never_sent() -> None:
    leaky = "You seem to be in a wheel spin loop, so change the `drive for` number."
    with pytest.raises(GuardrailRejected):
        await generate_feedback(PROACTIVE, llm=StubLLM(leaky), fallback_template=False)
    result = await generate_feedback(PROACTIVE, llm=StubLLM(leaky), fallback_template=True)
    assert result.used_template
    assert label_leak(result.text) is None


def test_label_guard_spares_block_names_and_the_students_own_words() -> None:
    assert label_leak("Add a `spin motor for` block after `drive for`.") is None
    assert label_leak("Explore a different angle in `turn for`.") is None
    assert label_leak("Why is my robot inactive? It waits for the start.", "why inactive") is None
    assert label_leak("You look inactive.") == "inactive"
    assert label_leak("Great iterative work!") == "iterative"
    assert label_leak("That was a Wheel-Spin moment.") == "Wheel-Spin"


async def test_proactive_request_without_trigger() -> None:
    request = PROACTIVE.model_copy(update={"trigger": None})
    with pytest.raises(BadFeedbackRequest):
        await generate_feedback(request, llm=StubLLM(), fallback_template=True)


@pytest.mark.parametrize("kind", list(TriggerType))
async def test_no_label_word_in_the_prompt_fact_or_any_reply(kind: TriggerType) -> None:
    request = proactive(kind)
    llm = StubLLM()
    by_model = await generate_feedback(request, chat=CHAT, llm=llm, fallback_template=False)
    by_template = await generate_feedback(request, llm=StubLLM(LLMUnavailable("x")), fallback_template=True)
    assert contains_banned_word(situation_section(llm.prompts[0])) is None
    assert contains_banned_word(by_model.text) is None
    assert contains_banned_word(by_template.text) is None


async def test_untrimmed_research_mode() -> None:
    long_reply = " ".join(["Change the `drive for` number and run it again."] * 6)
    result = await generate_feedback(PROACTIVE, llm=StubLLM(long_reply), fallback_template=False, trim=False)
    assert word_count(result.text) > 40


def test_canned_replies_are_short_and_clean() -> None:
    for text in CANNED_REPLIES.values():
        assert 0 < word_count(text) <= 40
        assert contains_banned_word(text) is None
