"""Model adapters: the :class:`LLMClient` port, the Ollama client, the template responder.

One feedback pass makes one logical model call: :meth:`LLMClient.complete`
with the whole prompt as a single user message.  :class:`OllamaClient` may
send that call more than once (transient failures, one empty answer), never
a different call.  Failures raise the :mod:`feedback.errors` tree:

- :class:`~feedback.errors.LLMUnavailable` (transient): connection refused
  or dropped, a timeout, HTTP 5xx / 429, a body that is not a chat response
  (:class:`~feedback.errors.MalformedAnswer`) — after ``max_retries``
  retries with exponential backoff and jitter;
- :class:`~feedback.errors.EmptyAnswer`: the answer was empty (or only
  reasoning) twice in a row;
- :class:`~feedback.errors.PromptRejected`: HTTP 400, 413, 422 — the server
  refused this request for its content; not retried (the template answers);
- :class:`~feedback.errors.ModelRejected`: any other HTTP 4xx (model not
  pulled ...), not retried.

A semaphore bounds the HTTP calls in flight per client (``LLM_CONCURRENCY``);
each attempt has its own timeout (``LLM_TIMEOUT_S``).  Answers come back with
leading reasoning (``<think>…</think>``) removed.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol

import httpx
import ollama
import pydantic

from feedback.errors import (
    EmptyAnswer,
    LLMUnavailable,
    MalformedAnswer,
    ModelRejected,
    PromptRejected,
)
from feedback.sanitize import _strip_reasoning as strip_reasoning
from feedback.templates import template_for_request
from topology.schemas.feedback import FeedbackRequest
from topology.settings import Settings, default

#: The answer budget of a feedback call (tokens).
NUM_PREDICT = 240
#: The model name recorded when the template responder answered.
TEMPLATE_MODEL = "template"
#: HTTP statuses that refuse a request for its own content (never retried).
_REFUSED_FOR_CONTENT = frozenset({400, 413, 422})


@dataclass(frozen=True, slots=True)
class LLMAnswer:
    """A model's answer: text without reasoning, the model, tokens spent, wall seconds."""

    text: str
    model: str
    tokens: int
    seconds: float
    attempts: int = 1


class LLMClient(Protocol):
    """The port every model adapter implements."""

    async def complete(self, prompt: str) -> LLMAnswer:
        """Answer ``prompt`` (one user message).  Raises :class:`~feedback.errors.LLMError`."""
        ...


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff with jitter: attempt n waits ``min(cap, base * 2**n)`` times 0.5 to 1."""

    base_s: float = 0.25
    cap_s: float = 4.0

    def delay(self, retry: int, rand: float) -> float:
        """The wait before retry number ``retry`` (0-based), given ``rand`` in [0, 1)."""
        return min(self.cap_s, self.base_s * 2.0**retry) * (0.5 + rand / 2)


@dataclass
class ClientStats:
    """Counters of one client (tests and metrics)."""

    http_calls: int = 0
    retries: int = 0
    empty_retries: int = 0
    sleeps: list[float] = field(default_factory=list)


def _classify(exc: BaseException) -> Exception:
    """Map an ``ollama``/``httpx`` failure to our error tree."""
    if isinstance(exc, ollama.ResponseError):
        code = exc.status_code
        if code < 0 or code >= 500 or code in (408, 429):
            return LLMUnavailable(f"model server error {code}: {exc.error}")
        if code in _REFUSED_FOR_CONTENT:
            return PromptRejected(f"the model server refused this request ({code}: {exc.error})")
        return ModelRejected(
            f"model server refused the request ({code}: {exc.error}); is the model pulled "
            "(`ollama pull $OLLAMA_MODEL`) and OLLAMA_MODEL spelled right?"
        )
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError, httpx.TimeoutException)):
        return LLMUnavailable(f"model call timed out ({type(exc).__name__})")
    if isinstance(exc, (OSError, httpx.TransportError)):
        return LLMUnavailable(f"model server unreachable: {type(exc).__name__}: {exc}")
    return MalformedAnswer(f"model server sent a malformed answer: {type(exc).__name__}: {exc}")


def _tokens(response: Any, prompt: str, text: str) -> int:
    counted = (response.prompt_eval_count or 0) + (response.eval_count or 0)
    return counted or (len(prompt) + len(text)) // 4


class OllamaClient:
    """:class:`LLMClient` on an Ollama server's ``/api/chat`` (non-streaming)."""

    def __init__(
        self,
        *,
        host: str,
        model: str,
        timeout_s: float = default("llm_timeout_s"),
        max_retries: int = default("llm_max_retries"),
        concurrency: int = default("llm_concurrency"),
        num_predict: int = NUM_PREDICT,
        backoff: Backoff | None = None,
        rand: Callable[[], float] = random.random,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.model = model
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.num_predict = num_predict
        self.backoff = backoff or Backoff()
        self.stats = ClientStats()
        self._rand = rand
        self._sleep = sleep
        self._sem = asyncio.Semaphore(concurrency)
        self._client = ollama.AsyncClient(host=host, timeout=timeout_s)

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> OllamaClient:
        """The client for ``OLLAMA_HOST``/``OLLAMA_MODEL`` with the ``LLM_*`` limits."""
        kwargs: dict[str, Any] = {
            "host": settings.ollama_host,
            "model": settings.ollama_model,
            "timeout_s": settings.llm_timeout_s,
            "max_retries": settings.llm_max_retries,
            "concurrency": settings.llm_concurrency,
        }
        return cls(**{**kwargs, **overrides})

    async def __aenter__(self) -> OllamaClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()  # type: ignore[no-untyped-call]

    async def _call(self, prompt: str) -> Any:
        async with self._sem:
            self.stats.http_calls += 1
            try:
                return await asyncio.wait_for(
                    self._client.chat(
                        model=self.model,
                        messages=[{"role": "user", "content": prompt}],
                        options={"num_predict": self.num_predict},
                        stream=False,
                    ),
                    timeout=self.timeout_s,
                )
            except (
                TimeoutError,
                ollama.ResponseError,
                OSError,
                httpx.HTTPError,
                ValueError,
                pydantic.ValidationError,
            ) as exc:
                raise _classify(exc) from exc

    async def complete(self, prompt: str) -> LLMAnswer:
        """Answer ``prompt``; see the module doc for retries and errors."""
        started = time.perf_counter()
        retries = empties = spent = 0
        while True:
            try:
                response = await self._call(prompt)
            except LLMUnavailable:
                if retries >= self.max_retries:
                    raise
                wait = self.backoff.delay(retries, self._rand())
                retries += 1
                self.stats.retries += 1
                self.stats.sleeps.append(wait)
                await self._sleep(wait)
                continue
            content = response.message.content or ""
            text = strip_reasoning(content).strip()
            tokens = _tokens(response, prompt, text)
            if text:
                return LLMAnswer(
                    text=text,
                    model=response.model or self.model,
                    tokens=spent + tokens,
                    seconds=time.perf_counter() - started,
                    attempts=1 + retries + empties,
                )
            spent += tokens
            if empties >= 1:
                raise EmptyAnswer("the model answered with nothing usable twice", tokens=spent)
            empties += 1
            self.stats.empty_retries += 1

    async def ping(self) -> bool:
        """True if the server answers its model list (a health check; never raises)."""
        try:
            await asyncio.wait_for(self._client.list(), timeout=self.timeout_s)
        except Exception:  # noqa: BLE001 - any failure means "not healthy"
            return False
        return True


class TemplateResponder:
    """:class:`LLMClient` that answers one request from the fixed templates (model ``template``)."""

    model = TEMPLATE_MODEL

    def __init__(self, request: FeedbackRequest) -> None:
        self._request = request

    async def complete(self, prompt: str) -> LLMAnswer:
        """The template reply of the request (``prompt`` is not read)."""
        started = time.perf_counter()
        text = template_for_request(self._request)
        return LLMAnswer(text=text, model=TEMPLATE_MODEL, tokens=0, seconds=time.perf_counter() - started)
