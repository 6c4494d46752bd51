"""A model request that fails for its own content gets the template at once,
with the reason recorded; only connection-level failures, 5xx and timeouts are
retried."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from feedback.errors import (
    EmptyAnswer,
    GuardrailRejected,
    LLMError,
    LLMUnavailable,
    MalformedAnswer,
    ModelRejected,
    PromptRejected,
)
from feedback.generate import generate_feedback
from feedback.llm import LLMAnswer, OllamaClient
from feedback.sanitize import clean_reply
from feedback.templates import template_for_request
from tests.fakes.ollama_server import FakeOllama, serve
from tests.unit.feedback.prompt_cases import PROACTIVE

MARKER = "Current program"


@pytest.fixture
async def fake() -> AsyncIterator[FakeOllama]:
    async with serve() as server:
        yield server


async def _no_sleep(seconds: float) -> None:
    return None


def client(fake: FakeOllama) -> OllamaClient:
    return OllamaClient(
        host=fake.url, model="llama3.2", timeout_s=2.0, max_retries=3, rand=lambda: 0.5, sleep=_no_sleep
    )


@pytest.mark.parametrize("status", [400, 413, 422])
async def test_a_request_refused_for_its_content_is_not_retried(fake: FakeOllama, status: int) -> None:
    fake.configure(refuse_containing="poison", refuse_status=status)
    async with client(fake) as llm:
        with pytest.raises(PromptRejected, match=f"refused this request \\({status}"):
            await llm.complete("a prompt with poison in it")
        assert llm.stats.http_calls == 1 and llm.stats.retries == 0
        answer = await llm.complete("an honest prompt")  # other prompts are answered
    assert answer.text and fake.chat_calls == 2


async def test_server_errors_are_still_retried(fake: FakeOllama) -> None:
    fake.configure(mode="flaky", fail_first=2)
    async with client(fake) as llm:
        answer = await llm.complete("a prompt")
    assert answer.attempts == 3 and llm.stats.retries == 2


def test_the_error_tree_says_which_failures_are_the_requests_own() -> None:
    assert PromptRejected.per_request and not PromptRejected.transient
    assert MalformedAnswer.per_request and MalformedAnswer.transient  # retried within the call
    for kind in (LLMUnavailable, EmptyAnswer, ModelRejected, GuardrailRejected):
        assert not kind.per_request


class Raising:
    def __init__(self, error: LLMError) -> None:
        self.error, self.calls = error, 0

    async def complete(self, prompt: str) -> LLMAnswer:
        self.calls += 1
        raise self.error


@pytest.mark.parametrize(
    "error",
    [
        PromptRejected("the model server refused this request (400: too long)"),
        MalformedAnswer("model server sent a malformed answer"),
    ],
    ids=["refused", "malformed"],
)
async def test_a_content_failure_gets_the_template_even_with_the_fallback_off(
    error: LLMError,
) -> None:
    llm = Raising(error)
    result = await generate_feedback(PROACTIVE, llm=llm, fallback_template=False)
    assert llm.calls == 1
    assert result.used_template and result.model == "template"
    assert result.text == clean_reply(template_for_request(PROACTIVE))
    assert result.fallback_reason == f"{type(error).__name__}: {error}"


@pytest.mark.parametrize("error", [LLMUnavailable("down"), ModelRejected("404 not pulled")])
async def test_an_outage_with_the_fallback_off_is_still_raised_for_a_retry(error: LLMError) -> None:
    with pytest.raises(type(error)):
        await generate_feedback(PROACTIVE, llm=Raising(error), fallback_template=False)


async def test_the_fake_refuses_over_http_through_the_whole_pass(fake: FakeOllama) -> None:
    fake.configure(refuse_containing=MARKER)
    async with client(fake) as llm:
        result = await generate_feedback(PROACTIVE, llm=llm, fallback_template=False)
    assert result.used_template and fake.chat_calls == 1
    assert result.fallback_reason is not None
    assert result.fallback_reason.startswith("PromptRejected: the model server refused")
