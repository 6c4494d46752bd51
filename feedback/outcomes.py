"""The feedback service's vocabulary: what it reports, returns and is told.

Value types only (no I/O), shared by :mod:`feedback.service`, its factory and
the adapters that read its results.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from topology.schemas.feedback import FeedbackMessage, FeedbackRequest, Lane, NudgeOutcome

Published = FeedbackMessage | NudgeOutcome
Publish = Callable[[Published], Awaitable[None]]
#: Told of a request the database refused (the request, the database's message).
OnRefused = Callable[[FeedbackRequest, str], Awaitable[None]]
#: The reason (and status ``failed``) of a request the database refused.
SINK_REFUSED = "sink_refused"
Status = Literal["acted", "answered", "suppressed", "pending", "failed"]


@dataclass(frozen=True, slots=True)
class DeliveryTiming:
    """Latencies of one delivered reply.

    :ivar model_s: the model call (retries included; 0 for a canned reply).
    :ivar service_s: from entering the service to the stored reply.
    :ivar since_request_s: from the request's time (``request.ts``, event
        time) to the stored reply, by the service clock: the end-to-end
        latency in live mode (meaningless when replaying old events).
    """

    lane: Lane
    model: str | None
    model_s: float
    service_s: float
    since_request_s: float


class ServiceMetrics(Protocol):
    """What the service reports (the worker maps it to Prometheus)."""

    def model_call(self, seconds: float, *, ok: bool, error: str | None) -> None:
        """One feedback pass that needed the model; ``error``: why it gave no answer."""

    def outcome(self, status: str, lane: Lane) -> None:
        """A request reached ``status`` (acted, answered, suppressed, pending, failed)."""

    def delivered(self, timing: DeliveryTiming) -> None:
        """A reply was stored and published."""


class NullMetrics:
    """:class:`ServiceMetrics` that records nothing."""

    def model_call(self, seconds: float, *, ok: bool, error: str | None) -> None:
        return None

    def outcome(self, status: str, lane: Lane) -> None:
        return None

    def delivered(self, timing: DeliveryTiming) -> None:
        return None


@dataclass(frozen=True, slots=True)
class HandleResult:
    """What one request came to.

    :ivar generated: a feedback pass ran (model or template or canned) in this call.
    """

    status: Status
    message: FeedbackMessage | None = None
    outcome: NudgeOutcome | None = None
    generated: bool = False


@dataclass
class RetryReport:
    """What one :meth:`FeedbackService.retry_pending` pass did."""

    delivered: int = 0
    failed: int = 0
    still_pending: int = 0
    republished: int = 0
