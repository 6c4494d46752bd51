"""The Ollama adapter against the fake Ollama HTTP server (in-process, real HTTP)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import ollama
import pytest

from feedback.errors import EmptyAnswer, LLMUnavailable, MalformedAnswer, ModelRejected
from feedback.llm import NUM_PREDICT, Backoff, OllamaClient, TemplateResponder
from tests.fakes.fixtures import fake_ollama, fake_ollama_process  # noqa: F401
from tests.fakes.ollama_server import DEFAULT_REPLY, MODEL_VERSION, FakeOllama, serve
from tests.unit.feedback.prompt_cases import PROACTIVE
from topology.settings import load_settings

PROMPT = "Current program:\nBlock names to use: pg_drivetrain_drive_for = `drive for`\n"
ANSWER = DEFAULT_REPLY.replace("{block}", "drive for")


@pytest.fixture
async def fake() -> AsyncIterator[FakeOllama]:
    async with serve() as server:
        yield server


class Sleeps:
    """A recording stand-in for asyncio.sleep (backoff waits are not slept)."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def client(fake: FakeOllama, **kwargs: object) -> OllamaClient:
    options: dict[str, object] = {
        "host": fake.url,
        "model": "llama3.2",
        "timeout_s": 2.0,
        "max_retries": 2,
        "rand": lambda: 0.5,
        "sleep": Sleeps(),
    }
    options.update(kwargs)
    return OllamaClient(**options)  # type: ignore[arg-type]


async def test_one_user_message_with_the_answer_budget(fake: FakeOllama) -> None:
    async with client(fake) as llm:
        answer = await llm.complete(PROMPT)
    assert answer.text == ANSWER
    assert answer.model == "llama3.2"
    assert answer.attempts == 1
    assert answer.tokens == len(PROMPT) // 4 + len(ANSWER) // 4
    assert answer.seconds > 0
    body = fake.requests[0].body
    assert body["messages"] == [{"role": "user", "content": PROMPT}]
    assert body["options"] == {"num_predict": NUM_PREDICT}
    assert body["stream"] is False
    assert fake.prompts == [PROMPT]


async def test_reasoning_is_stripped(fake: FakeOllama) -> None:
    fake.configure(mode="think")
    async with client(fake) as llm:
        answer = await llm.complete(PROMPT)
    assert answer.text == ANSWER
    assert "<think>" not in answer.text


async def test_reasoning_only_is_retried_once_then_empty_answer(fake: FakeOllama) -> None:
    fake.configure(mode="think_only")
    async with client(fake) as llm:
        with pytest.raises(EmptyAnswer) as caught:
            await llm.complete(PROMPT)
        assert llm.stats.http_calls == 2
    assert caught.value.tokens > 0
    assert len(fake.prompts) == 2


async def test_empty_then_answer(fake: FakeOllama) -> None:
    fake.configure(script=["empty", "ok"])
    async with client(fake) as llm:
        answer = await llm.complete(PROMPT)
        assert llm.stats.empty_retries == 1
    assert answer.text == ANSWER
    assert answer.attempts == 2


async def test_server_errors_are_retried_with_growing_backoff(fake: FakeOllama) -> None:
    fake.configure(mode="fail")
    sleeps = Sleeps()
    async with client(fake, max_retries=3, sleep=sleeps, backoff=Backoff(base_s=0.1, cap_s=0.3)) as llm:
        with pytest.raises(LLMUnavailable, match="500"):
            await llm.complete(PROMPT)
        assert llm.stats.http_calls == 4
    # jitter fixed at 0.5 → factor 0.75 of min(cap, base * 2**n)
    assert sleeps.calls == pytest.approx([0.075, 0.15, 0.225])


async def test_flaky_server_recovers_within_the_retries(fake: FakeOllama) -> None:
    fake.configure(mode="flaky", fail_first=2)
    async with client(fake, max_retries=2) as llm:
        answer = await llm.complete(PROMPT)
        assert llm.stats.retries == 2
    assert answer.attempts == 3
    assert answer.text == ANSWER


async def test_no_retries_configured(fake: FakeOllama) -> None:
    fake.configure(mode="fail", status=503)
    async with client(fake, max_retries=0) as llm:
        with pytest.raises(LLMUnavailable, match="503"):
            await llm.complete(PROMPT)
        assert llm.stats.http_calls == 1


async def test_timeout_per_call(fake: FakeOllama) -> None:
    fake.configure(mode="slow", delay_s=2.0)
    async with client(fake, timeout_s=0.3, max_retries=1) as llm:
        started = time.perf_counter()
        with pytest.raises(LLMUnavailable, match="timed out"):
            await llm.complete(PROMPT)
        elapsed = time.perf_counter() - started
        assert llm.stats.http_calls == 2
    assert elapsed < 1.5


async def test_malformed_body_is_transient(fake: FakeOllama) -> None:
    fake.configure(mode="malformed")
    async with client(fake, max_retries=1) as llm:
        with pytest.raises(MalformedAnswer):
            await llm.complete(PROMPT)
        assert llm.stats.http_calls == 2
    assert MalformedAnswer.transient


async def test_dropped_connection_is_unavailable(fake: FakeOllama) -> None:
    fake.configure(mode="down")
    async with client(fake, max_retries=1) as llm:
        with pytest.raises(LLMUnavailable):
            await llm.complete(PROMPT)
        assert llm.stats.http_calls == 2


async def test_refused_connection_is_unavailable(fake: FakeOllama) -> None:
    await fake.stop()
    async with client(fake, max_retries=1) as llm:
        with pytest.raises(LLMUnavailable, match="unreachable"):
            await llm.complete(PROMPT)
        assert not await llm.ping()


async def test_missing_model_is_not_retried(fake: FakeOllama) -> None:
    fake.configure(mode="missing")
    async with client(fake) as llm:
        with pytest.raises(ModelRejected, match="ollama pull"):
            await llm.complete(PROMPT)
        assert llm.stats.http_calls == 1


async def test_concurrency_is_bounded(fake: FakeOllama) -> None:
    fake.configure(mode="slow", delay_s=0.15)
    async with client(fake, concurrency=2) as llm:
        answers = await asyncio.gather(*(llm.complete(PROMPT) for _ in range(6)))
    assert len(answers) == 6
    assert fake.max_in_flight == 2


async def test_ping(fake: FakeOllama) -> None:
    async with client(fake) as llm:
        assert await llm.ping()


def test_from_settings() -> None:
    settings = load_settings(
        ollama_host="http://127.0.0.1:1",
        ollama_model="qwen3:4b",
        llm_timeout_s=7.0,
        llm_max_retries=5,
        llm_concurrency=3,
    )
    llm = OllamaClient.from_settings(settings)
    assert (llm.model, llm.timeout_s, llm.max_retries) == ("qwen3:4b", 7.0, 5)


def test_backoff_grows_and_is_capped() -> None:
    backoff = Backoff(base_s=0.25, cap_s=4.0)
    waits = [backoff.delay(n, 0.999999) for n in range(8)]
    assert waits == sorted(waits)
    assert max(waits) <= 4.0
    assert backoff.delay(0, 0.0) == pytest.approx(0.125)


async def test_template_responder() -> None:
    answer = await TemplateResponder(PROACTIVE).complete("ignored")
    assert answer.model == "template"
    assert answer.tokens == 0
    assert answer.text


# --- the fake server itself, through its shared fixtures ----------------------------


async def test_fake_streams_ndjson_and_obeys_control(fake_ollama: FakeOllama) -> None:  # noqa: F811
    client = ollama.AsyncClient(host=fake_ollama.url)
    parts = [
        p
        async for p in await client.chat(model="llama3.2", messages=[{"role": "user", "content": PROMPT}], stream=True)
    ]
    assert "".join(p.message.content or "" for p in parts) == ANSWER
    assert [p.done for p in parts][-1] is True and not any(p.done for p in parts[:-1])
    assert parts[-1].eval_count and parts[-1].prompt_eval_count
    async with httpx.AsyncClient(base_url=fake_ollama.url) as http:
        state = (await http.post("/_control", json={"mode": "missing"})).json()
        assert state["mode"] == "missing"
        assert (await http.post("/_control", json={"mode": "nope"})).status_code == 400
        assert (await http.get("/api/version")).json() == {"version": MODEL_VERSION}
    with pytest.raises(ollama.ResponseError):
        await client.chat(model="llama3.2", messages=[{"role": "user", "content": "x"}])
    listed = await client.list()
    assert [m.model for m in listed.models] == ["llama3.2:latest"]
    await client.close()  # type: ignore[no-untyped-call]


async def test_fake_as_a_process(fake_ollama_process: str) -> None:  # noqa: F811
    async with OllamaClient(host=fake_ollama_process, model="llama3.2", max_retries=0) as llm:
        assert (await llm.complete(PROMPT)).text == ANSWER
        async with httpx.AsyncClient(base_url=fake_ollama_process) as http:
            await http.post("/_control", json={"mode": "fail"})
            with pytest.raises(LLMUnavailable):
                await llm.complete(PROMPT)
            recorded = (await http.get("/_requests")).json()
    assert [r["prompt"] for r in recorded] == [PROMPT, PROMPT]
