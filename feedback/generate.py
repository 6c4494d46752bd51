"""``generate_feedback``: the one feedback pass, for both lanes.

request → feedback classes (policy) → prompt → ONE model call → sanitize and
length rules → reply.  No classifier call and no second model pass.

- A canned reactive request (the student's run is in progress, or there is
  no session yet) gets a fixed reply without the model.
- No usable model answer (server unavailable, empty answer, model refused,
  or a reply that names an internal behaviour label): with the template
  fallback on, the template responder answers (model ``template``); with it
  off, the model's error is raised (:mod:`feedback.errors`), so the caller
  can retry later — except for a failure of the request's own content
  (``per_request``: the server refused the prompt, or answered it with a
  malformed body every time), which no retry can fix: the template answers.
  The reason is in ``fallback_reason`` either way.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from feedback.classes import FeedbackClass, sorted_classes
from feedback.errors import (
    BadFeedbackRequest,
    EmptyAnswer,
    FeedbackError,
    GuardrailRejected,
    LLMError,
    LLMUnavailable,
)
from feedback.llm import LLMAnswer, LLMClient, TemplateResponder
from feedback.policy import classes_for_request
from feedback.prompt import build_prompt
from feedback.sanitize import clean_reply
from topology.schemas.feedback import FeedbackRequest, Lane

#: Fixed replies that need no model, in our own words.
CANNED_REPLIES: dict[str, str] = {
    "run_in_progress": (
        "Your robot is still running. Press the Stop button to end the run, then ask your question again."
    ),
    "no_session": ("I cannot see your project yet. Open your playground and run your program once, then ask me again."),
}

#: Internal behaviour labels as a reply might spell them (outside backticks).
_LABELS = re.compile(
    r"wheel[\s_-]*spin\w*|\bresilien\w*|\bexplorers?\b|\biterative\w*|\binactiv\w*|\btrigger\w*",
    re.I,
)
_CODE = re.compile(r"`[^`]*`")


@dataclass(frozen=True, slots=True)
class FeedbackResult:
    """The outcome of one feedback pass.

    :ivar model: the model that answered; ``template`` for the template
        responder; ``None`` for a canned reply.
    :ivar seconds: wall time of the model call (failed attempts included).
    :ivar fallback_reason: why the template answered instead of the model.
    """

    text: str
    classes: tuple[FeedbackClass, ...]
    model: str | None
    prompt: str | None
    tokens: int
    seconds: float
    used_template: bool
    canned: str | None = None
    fallback_reason: str | None = None


def label_leak(reply: str, question: str | None = None) -> str | None:
    """The first internal label spelled in ``reply`` outside backticks, or ``None``.

    Words the student used in ``question`` are not counted.
    """
    asked = (question or "").lower()
    for match in _LABELS.finditer(_CODE.sub(" ", reply)):
        if match.group(0).lower() not in asked:
            return match.group(0)
    return None


def _canned(request: FeedbackRequest, kind: str) -> FeedbackResult:
    return FeedbackResult(
        text=CANNED_REPLIES[kind],
        classes=(),
        model=None,
        prompt=None,
        tokens=0,
        seconds=0.0,
        used_template=False,
        canned=kind,
    )


async def _model_reply(llm: LLMClient, prompt: str, request: FeedbackRequest, trim: bool) -> tuple[str, LLMAnswer]:
    answer = await llm.complete(prompt)
    text = clean_reply(answer.text, trim=trim)
    if not text:
        raise EmptyAnswer("the model's answer was empty after cleaning", tokens=answer.tokens)
    leaked = label_leak(text, request.question)
    if leaked:
        raise GuardrailRejected(f"the model's reply names an internal label ({leaked!r})")
    return text, answer


async def generate_feedback(
    request: FeedbackRequest,
    *,
    chat: Sequence[tuple[str, str]] = (),
    llm: LLMClient | None,
    fallback_template: bool,
    trim: bool = True,
) -> FeedbackResult:
    """One feedback pass for ``request`` (either lane).

    :param chat: recent ``(role, text)`` turns of the session, oldest first.
    :param llm: the model client; ``None`` means no model is configured.
    :param fallback_template: answer with the template when the model gives no
        usable answer (else raise, except for a ``per_request`` failure).
    :param trim: apply the length rules (off only for research runs).
    :raises BadFeedbackRequest: when the request has no feedback classes.
    :raises LLMError, GuardrailRejected: no usable model answer and no fallback.
    """
    if request.canned is not None:
        return _canned(request, request.canned)
    if request.lane is Lane.PROACTIVE and request.trigger is None:
        raise BadFeedbackRequest(f"proactive request {request.request_id} has no trigger")
    classes = tuple(sorted_classes(classes_for_request(request)))
    if not classes:
        raise BadFeedbackRequest(f"request {request.request_id} maps to no feedback class")
    prompt = build_prompt(request, chat=chat)
    started = time.perf_counter()
    try:
        if llm is None:
            raise LLMUnavailable("no model client is configured")
        text, answer = await _model_reply(llm, prompt, request, trim)
    except (LLMError, GuardrailRejected) as exc:
        if not fallback_template and not exc.per_request:
            raise
        reason: FeedbackError = exc
    else:
        return FeedbackResult(
            text=text,
            classes=classes,
            model=answer.model,
            prompt=prompt,
            tokens=answer.tokens,
            seconds=answer.seconds,
            used_template=False,
        )
    seconds = time.perf_counter() - started
    fallback = await TemplateResponder(request).complete(prompt)
    return FeedbackResult(
        text=clean_reply(fallback.text, trim=trim),
        classes=classes,
        model=fallback.model,
        prompt=prompt,
        tokens=0,
        seconds=seconds,
        used_template=True,
        fallback_reason=f"{type(reason).__name__}: {reason}",
    )
