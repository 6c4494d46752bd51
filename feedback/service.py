"""The feedback stage's side effects: store, generate once, store the reply, publish.

:class:`FeedbackService` turns a :class:`FeedbackRequest` into stored rows
and published records.  The service is the one owner of the request's lifecycle: it
makes a request durable (:meth:`~FeedbackService.accept`, also inside
:meth:`~FeedbackService.handle`; :meth:`~FeedbackService.record_question` for
a question the gateway takes before any request is built), generates and
stores its reply, publishes it, and retries it.  The worker calls
:meth:`~FeedbackService.accept` for every request, :meth:`~FeedbackService.handle`
in the background and :meth:`~FeedbackService.retry_pending` periodically; the
worker and the gateway build it with :func:`feedback.factory.build_service`.

Guarantees (Postgres is the outbox):

- A proactive fire is recorded ``pending`` and committed *before* the model
  is called.  Generation runs with the fire's row locked; the reply is
  inserted under an id derived from the trigger and the fire marked
  ``acted`` in the same transaction; only then is the message published.
- A re-delivered or replayed request finds the stored state: an acted fire
  re-publishes its stored message (consumers dedupe by ``message_id``) and
  never calls the model or inserts a row again.
- A failed pass (model down and the template fallback off) leaves the row
  ``pending`` with one more attempt and the error; :meth:`retry_pending`
  finishes it later, claiming rows with ``FOR UPDATE SKIP LOCKED`` so that
  concurrent workers never generate the same nudge twice; after
  ``FEEDBACK_MAX_ATTEMPTS`` it becomes ``failed``.
- A suppressed fire is recorded with its reason and its outcome published.
- A student's question is stored (idempotently) with its request, answered
  the same way, and marked ``answered``; canned replies are stored too.
- A message stored but not published (the process died in between) is
  published by :meth:`retry_pending`.
- A request the database refuses for its content (:func:`delivery.repo.errors.classify`
  says ``refuse``) is never retried: it is handed to ``on_refused`` (the
  worker dead-letters it), its row (if stored) is marked ``failed`` with reason
  ``sink_refused`` and the database's message, and the lane goes on.  Only
  connection-level failures propagate, for the caller to retry.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import asyncpg

from delivery.repo import messages, outbox, requests, triggers
from delivery.repo.codec import as_uuid
from delivery.repo.errors import describe, is_transient
from feedback.errors import (
    BadFeedbackRequest,
    FeedbackError,
    GuardrailRejected,
    InternalFailure,
    LLMError,
)
from feedback.generate import FeedbackResult, generate_feedback
from feedback.llm import LLMClient
from feedback.outcomes import (
    SINK_REFUSED,
    DeliveryTiming,
    HandleResult,
    NullMetrics,
    OnRefused,
    Publish,
    Published,
    RetryReport,
    ServiceMetrics,
    Status,
)
from topology.schemas.feedback import FeedbackMessage, FeedbackRequest, Lane, NudgeOutcome
from topology.settings import Settings

log = logging.getLogger(__name__)

__all__ = [
    "SINK_REFUSED",
    "DeliveryTiming",
    "FeedbackService",
    "HandleResult",
    "NullMetrics",
    "OnRefused",
    "Publish",
    "Published",
    "RecordedQuestion",
    "RetryReport",
    "ServiceMetrics",
    "Status",
]


@dataclass(frozen=True, slots=True)
class RecordedQuestion:
    """What :meth:`FeedbackService.record_question` stored.

    :ivar new_request: the question row is new (False: the same request id was stored before).
    """

    request_id: str
    message: messages.StoredMessage
    new_request: bool


@dataclass
class _Plan:
    """The result of a transaction, and what to publish once it has committed."""

    result: HandleResult
    lane: Lane
    timing: DeliveryTiming | None = None
    publish: list[Published] = field(default_factory=list)
    counted: bool = True
    """Report the status to the metrics (False: a re-publish, or a repeated pending)."""


def _reply(result: FeedbackResult) -> outbox.Reply:
    return outbox.Reply(result.text, [c.value for c in result.classes], result.model, note=result.fallback_reason)


def _refusal(exc: BaseException) -> bool:
    """True when ``exc`` is the database refusing the request (not an outage, not ours)."""
    return not isinstance(exc, FeedbackError) and not is_transient(exc)


class FeedbackService:
    """Store → generate once → store the reply → publish, for both lanes."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        llm: LLMClient | None,
        settings: Settings,
        publish: Publish,
        *,
        metrics: ServiceMetrics | None = None,
        clock: Callable[[], float] = time.time,
        on_refused: OnRefused | None = None,
    ) -> None:
        self.pool = pool
        self.on_refused = on_refused
        self.llm = llm
        self.publish = publish
        self.metrics: ServiceMetrics = metrics or NullMetrics()
        self.clock = clock
        self.fallback = settings.llm_fallback_template
        self.max_attempts = settings.feedback_max_attempts
        self.retry_after_s = settings.feedback_retry_after_s
        self.max_delay_s = settings.feedback_retry_max_delay_s
        self.retry_workers = settings.llm_concurrency

    # --- entry points ------------------------------------------------------------
    async def accept(self, request: FeedbackRequest) -> bool:
        """Make the request durable; True when generation is still to do.

        A proactive fire is stored ``pending`` (a suppressed one is stored
        with its reason and its outcome published: nothing is left to do); a
        question is stored with its request.  Idempotent.

        :raises Exception: a database failure (connection-level: retry; any
            other: the database refused the request).
        """
        if request.lane is Lane.PROACTIVE and request.decision == "suppress":
            await self.handle(request)  # recorded with its reason; no model involved
            return False
        if request.lane is Lane.PROACTIVE:
            await self._durable_fire(request)
            return True
        async with self.pool.acquire() as conn:
            await self._durable_question(conn, request)
        return True

    async def record_question(
        self, *, request_id: str, student_key: str, session_id: str | None, text: str
    ) -> RecordedQuestion:
        """Store a student's question ``pending`` with its student message (one
        transaction), before any feedback request is built (the gateway).
        Idempotent: the same request id stores nothing twice."""
        async with self.pool.acquire() as conn, conn.transaction():
            new, stored = await outbox.record_question(conn, request_id, student_key, session_id, text)
        return RecordedQuestion(request_id, stored, new)

    async def aclose(self) -> None:
        """Close the model client (the worker and the gateway call it at shutdown)."""
        aclose = getattr(self.llm, "aclose", None)
        if aclose is not None:
            await aclose()

    async def handle(self, request: FeedbackRequest) -> HandleResult:
        """Act on one request (either lane); publishes after each commit.

        :raises BadFeedbackRequest: a proactive request without a trigger.
        :raises Exception: a connection-level database failure (retry), or
            whatever ``publish`` raises (the rows stay committed; a re-delivery
            or the sweeper publishes again).
        """
        started = time.perf_counter()
        try:
            if request.lane is Lane.PROACTIVE:
                plan = await self._proactive(request, started)
            else:
                plan = await self._reactive(request, started)
        except Exception as exc:
            if not _refusal(exc):
                raise
            plan = await self._refused(request, exc)
        await self._execute(plan)
        return plan.result

    async def retry_pending(self, *, limit: int = 100) -> RetryReport:
        """Finish due pending nudges and questions, and publish unpublished messages.

        Safe to run from several tasks or workers at once: each row is claimed
        by one transaction only, and each row is tried at most once per pass.
        """
        report, budget = RetryReport(), [limit]
        pass_started = await self.pool.fetchval("select clock_timestamp()")

        async def worker() -> None:
            while budget[0] > 0:
                budget[0] -= 1
                plan = await self._retry_one(pass_started)
                if plan is None:
                    return
                self._count(report, plan.result.status)
                try:
                    await self._execute(plan)
                except Exception:  # the unpublished sweep publishes it later
                    log.exception("publishing a retried feedback message failed")

        await asyncio.gather(*(worker() for _ in range(max(1, self.retry_workers))))
        report.republished = await self._publish_unpublished(limit)
        return report

    # --- proactive ---------------------------------------------------------------
    async def _proactive(self, request: FeedbackRequest, started: float) -> _Plan:
        trigger = request.trigger
        if trigger is None:
            raise BadFeedbackRequest(f"proactive request {request.request_id} has no trigger")
        if request.decision == "suppress":
            reason = request.suppress_reason or "suppressed"
            new = await triggers.record_trigger(self.pool, request, status="suppressed", reason=reason)
            if new:
                outcome = self._outcome(request, "suppressed", reason=reason)
                return _Plan(HandleResult("suppressed", outcome=outcome), Lane.PROACTIVE, publish=[outcome])
            return await self._stored_state(trigger.trigger_id)
        first = await self._durable_fire(request)
        async with self.pool.acquire() as conn, conn.transaction():
            row = await triggers.lock_trigger(conn, trigger.trigger_id)
            if row is not None and row.status == "pending":
                return await self._finish_trigger(conn, request, first=first, started=started)
        return await self._stored_state(trigger.trigger_id)

    async def _durable_fire(self, request: FeedbackRequest) -> bool:
        """Store a proactive fire ``pending`` with its request; True if new."""
        return await triggers.record_trigger(self.pool, request, status="pending")

    async def _finish_trigger(
        self, conn: asyncpg.Connection, request: FeedbackRequest, *, first: bool, started: float
    ) -> _Plan:
        """Generate and store the nudge of a locked pending fire (inside a transaction)."""
        chat = await messages.recent_chat(conn, request.student_key, request.session_id)
        try:
            result = await self._generate(request, chat)
        except FeedbackError as exc:
            return await self._trigger_failed(conn, request, exc, first=first)
        message, new = await outbox.store_nudge(conn, request, _reply(result))
        outcome = self._outcome(request, "acted", message=message)
        timing = self._timing(request, result, started)
        return _Plan(
            HandleResult("acted", message, outcome, generated=new),
            Lane.PROACTIVE,
            timing=timing,
            publish=[message, outcome],
        )

    async def _trigger_failed(
        self, conn: asyncpg.Connection, request: FeedbackRequest, exc: FeedbackError, *, first: bool
    ) -> _Plan:
        assert request.trigger is not None
        tid, error = request.trigger.trigger_id, f"{type(exc).__name__}: {exc}"
        attempts = await triggers.note_attempt(conn, tid, error)
        if isinstance(exc, BadFeedbackRequest) or attempts >= self.max_attempts:
            reason = "unanswerable" if isinstance(exc, BadFeedbackRequest) else "gave_up"
            await triggers.mark_failed(conn, tid, error, reason=reason)
            outcome = self._outcome(request, "failed", reason=reason)
            return _Plan(HandleResult("failed", outcome=outcome), Lane.PROACTIVE, publish=[outcome])
        log.warning("nudge %s pending after attempt %d: %s", tid, attempts, error)
        outcome = self._outcome(request, "pending", reason=error)
        return _Plan(
            HandleResult("pending", outcome=outcome), Lane.PROACTIVE, publish=[outcome] if first else [], counted=first
        )

    async def _stored_state(self, trigger_id: str) -> _Plan:
        """Re-publish what a fire already came to (re-delivery, replay)."""
        row = await triggers.get_trigger(self.pool, trigger_id)
        if row is None or row.request is None:
            raise BadFeedbackRequest(
                f"trigger {trigger_id} is not stored: another id holds the same fire "
                "(student, session, type, fire key); trigger ids must be derived from that key"
            )
        message = None
        if row.status == "acted" and row.response_id is not None:
            message = await outbox.stored_message(self.pool, row.response_id)
        outcome = self._outcome(row.request, row.status, reason=row.reason, message=message)
        publish: list[Published] = [message, outcome] if message is not None else [outcome]
        return _Plan(HandleResult(row.status, message, outcome), Lane.PROACTIVE, publish=publish, counted=False)

    # --- reactive ----------------------------------------------------------------
    async def _reactive(self, request: FeedbackRequest, started: float) -> _Plan:
        async with self.pool.acquire() as conn:
            qid, first = await self._durable_question(conn, request)
            async with conn.transaction():
                row = await requests.lock_question(conn, qid)
                if row is not None and row.status == "pending":
                    return await self._finish_question(conn, request, qid, first=first, started=started)
            answer = await messages.reply_for_request(conn, qid)
        if answer is None:
            return _Plan(HandleResult("failed"), Lane.REACTIVE, counted=False)
        message = answer.to_feedback_message()
        return _Plan(HandleResult("answered", message), Lane.REACTIVE, publish=[message], counted=False)

    @staticmethod
    async def _durable_question(conn: asyncpg.Connection, request: FeedbackRequest) -> tuple[str, bool]:
        """Store a reactive request's question with the request (its own transaction).

        :returns: ``(question id, True if the question row is new)``.
        """
        async with conn.transaction():
            return await outbox.store_question(conn, request)

    async def _finish_question(
        self,
        conn: asyncpg.Connection,
        request: FeedbackRequest,
        qid: str,
        *,
        first: bool,
        started: float,
    ) -> _Plan:
        """Answer a locked pending question and store the answer (inside a transaction)."""
        chat = await messages.recent_chat(conn, request.student_key, request.session_id, exclude_response_id=qid)
        try:
            result = await self._generate(request, chat)
        except FeedbackError as exc:
            error = f"{type(exc).__name__}: {exc}"
            attempts = await requests.note_attempt(conn, qid, error)
            if isinstance(exc, BadFeedbackRequest) or attempts >= self.max_attempts:
                await requests.mark_failed(conn, qid, error)
                return _Plan(HandleResult("failed"), Lane.REACTIVE)
            log.warning("question %s pending after attempt %d: %s", qid, attempts, error)
            return _Plan(HandleResult("pending"), Lane.REACTIVE, counted=first)
        message, new = await outbox.store_answer(conn, request, qid, _reply(result))
        return _Plan(
            HandleResult("answered", message, generated=new),
            Lane.REACTIVE,
            timing=self._timing(request, result, started),
            publish=[message],
        )

    # --- retries -----------------------------------------------------------------
    async def _retry_one(self, pass_started: datetime) -> _Plan | None:
        """Claim one due row not tried since ``pass_started`` and finish it."""
        started = time.perf_counter()
        after, cap = self.retry_after_s, self.max_delay_s
        async with self.pool.acquire() as conn, conn.transaction():
            row = await triggers.claim_due(conn, retry_after_s=after, max_delay_s=cap, touched_before=pass_started)
            if row is not None and row.request is not None:
                claimed = row.request
                return await self._settle_claimed(
                    conn, claimed, self._finish_trigger(conn, claimed, first=False, started=started)
                )
            question = await requests.claim_due(conn, retry_after_s=after, max_delay_s=cap, touched_before=pass_started)
            if question is not None and question.request is not None:
                claimed = question.request
                return await self._settle_claimed(
                    conn,
                    claimed,
                    self._finish_question(conn, claimed, question.request_id, first=False, started=started),
                )
        return None

    async def _settle_claimed(
        self, conn: asyncpg.Connection, claimed: FeedbackRequest, finish: Coroutine[Any, Any, _Plan]
    ) -> _Plan:
        """Finish a claimed row inside a savepoint; a refusal of its record rolls back to
        the savepoint and marks the row ``failed`` in the claiming transaction, so its
        lock is held throughout and no concurrent sweep can claim it in between."""
        try:
            async with conn.transaction():
                return await finish
        except Exception as exc:
            if not _refusal(exc):
                raise
            return await self._refused(claimed, exc, conn)

    async def _refused(
        self, request: FeedbackRequest, exc: BaseException, db: asyncpg.Connection | asyncpg.Pool | None = None
    ) -> _Plan:
        """The database refused ``request``: hand it over, mark its row ``failed`` (through
        ``db``, the claiming transaction's connection when there is one), go on."""
        db = db if db is not None else self.pool
        error = describe(exc)
        log.error("feedback request %s refused by the database (not retried): %s", request.request_id, error)
        if self.on_refused is not None:
            await self.on_refused(request, error)
        self.metrics.outcome("failed", request.lane)
        note = f"{SINK_REFUSED}: {error}"
        if request.lane is Lane.PROACTIVE and request.trigger is not None:
            await triggers.mark_failed(db, request.trigger.trigger_id, note, reason=SINK_REFUSED)
            outcome = self._outcome(request, "failed", reason=SINK_REFUSED)
            return _Plan(HandleResult("failed", outcome=outcome), Lane.PROACTIVE, publish=[outcome], counted=False)
        await requests.mark_failed(db, outbox.question_id(request), note)
        return _Plan(HandleResult("failed"), Lane.REACTIVE, counted=False)

    async def _publish_unpublished(self, limit: int) -> int:
        rows = await messages.unpublished(self.pool, older_than_s=self.retry_after_s, limit=limit)
        done = 0
        for row in rows:
            try:
                await self.publish(row.to_feedback_message())
            except Exception:  # tried again on the next pass
                log.exception("re-publishing message %d failed", row.id)
                continue
            done += await messages.mark_published(self.pool, [row.id])
        return done

    @staticmethod
    def _count(report: RetryReport, status: Status) -> None:
        if status in ("acted", "answered"):
            report.delivered += 1
        elif status == "failed":
            report.failed += 1
        else:
            report.still_pending += 1

    # --- helpers -----------------------------------------------------------------
    async def _generate(self, request: FeedbackRequest, chat: Sequence[tuple[str, str]]) -> FeedbackResult:
        started = time.perf_counter()
        try:
            result = await generate_feedback(request, chat=chat, llm=self.llm, fallback_template=self.fallback)
        except (LLMError, GuardrailRejected) as exc:
            seconds = time.perf_counter() - started
            self.metrics.model_call(seconds, ok=False, error=type(exc).__name__)
            raise
        except FeedbackError:
            raise
        except Exception as exc:  # counted as a failed attempt, so never retried forever
            log.exception("feedback pass for %s raised", request.request_id)
            raise InternalFailure(f"{type(exc).__name__}: {exc}") from exc
        if result.canned is None:
            error = result.fallback_reason.split(":", 1)[0] if result.fallback_reason else None
            self.metrics.model_call(result.seconds, ok=error is None, error=error)
        return result

    async def _execute(self, plan: _Plan) -> None:
        """Publish what a committed transaction produced, then record metrics."""
        published: list[int] = []
        for record in plan.publish:
            await self.publish(record)
            if isinstance(record, FeedbackMessage):
                published.append(record.message_id)
        await messages.mark_published(self.pool, published)
        if plan.timing is not None:
            self.metrics.delivered(plan.timing)
        if plan.counted:
            self.metrics.outcome(plan.result.status, plan.lane)

    def _outcome(
        self,
        request: FeedbackRequest,
        status: triggers.Status,
        *,
        reason: str | None = None,
        message: FeedbackMessage | None = None,
    ) -> NudgeOutcome:
        trigger = request.trigger
        assert trigger is not None
        return NudgeOutcome(
            trigger_id=str(as_uuid(trigger.trigger_id)),
            trigger_type=trigger.type.value,
            student_key=trigger.student_key,
            session_id=trigger.session_id,
            status=status,
            reason=reason,
            message_id=message.message_id if message else None,
            response_id=message.response_id if message else None,
            at=self.clock(),
        )

    def _timing(self, request: FeedbackRequest, result: FeedbackResult, started: float) -> DeliveryTiming:
        return DeliveryTiming(
            lane=request.lane,
            model=result.model,
            model_s=result.seconds,
            service_s=time.perf_counter() - started,
            since_request_s=self.clock() - request.ts,
        )
