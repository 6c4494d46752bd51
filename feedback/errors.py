"""What can go wrong while producing feedback: one exception tree.

Every error raised by the model adapters, :mod:`feedback.generate` and
:mod:`feedback.service` derives from :class:`FeedbackError`.  The class
attribute ``transient`` tells the retry policy whether trying the same
work again later can succeed (a model server that is down) or not (a
request that can never be answered).  Pure: standard library only.
"""

from __future__ import annotations

from typing import ClassVar


class FeedbackError(Exception):
    """Root of every feedback failure.

    ``transient``: trying the same call again can succeed.  ``per_request``:
    the failure is this request's own (its content), so later passes would fail
    the same way: the template answers at once, whatever ``LLM_FALLBACK_TEMPLATE``
    says, and the reason is recorded with the reply.
    """

    transient: ClassVar[bool] = False
    per_request: ClassVar[bool] = False


class LLMError(FeedbackError):
    """The model call gave no usable answer."""


class LLMUnavailable(LLMError):
    """No model answered: connection refused, timeout, HTTP 5xx or 429.

    Transient.  Check that the model server runs (``OLLAMA_HOST``) and that
    ``LLM_TIMEOUT_S`` suits the model's speed; with ``LLM_FALLBACK_TEMPLATE``
    on, the template responder answers meanwhile.
    """

    transient = True


class MalformedAnswer(LLMUnavailable):
    """The model server answered with a body that is not a chat response.

    Retried within the call (transient); when every try of the call gets one,
    the prompt is what the server chokes on (``per_request``): the template answers.
    """

    per_request = True


class EmptyAnswer(LLMError):
    """The model answered, but with nothing usable (empty, or reasoning only), twice.

    :ivar tokens: tokens the model spent on the empty answers.
    """

    transient = True

    def __init__(self, message: str, *, tokens: int = 0) -> None:
        super().__init__(message)
        self.tokens = tokens


class ModelRejected(LLMError):
    """The model server refused the request (HTTP 4xx other than 429).

    Permanent for this configuration: usually the model is not pulled on the
    server (``ollama pull $OLLAMA_MODEL``) or ``OLLAMA_MODEL`` is misspelled.
    """


class PromptRejected(LLMError):
    """The model server refused this request for its content (HTTP 400, 413, 422:
    a prompt too long, a refused prompt, a request it cannot parse).

    Permanent for this request (``per_request``): not retried; the template
    answers and the server's message is recorded with the reply.
    """

    per_request = True


class GuardrailRejected(FeedbackError):
    """The model's reply names an internal behaviour label; it is never sent.

    Transient: the next model answer may be fine.
    """

    transient = True


class BadFeedbackRequest(FeedbackError):
    """The request cannot be answered at all (a proactive request without a
    trigger, a trigger type with no feedback classes).  Permanent."""


class InternalFailure(FeedbackError):
    """A feedback pass raised something unexpected (a bug; the log has the traceback).

    Counted as a failed attempt like any other, so a request that always
    trips the bug ends ``failed`` instead of being retried forever.
    """
