"""Student questions: ``POST /v1/students/{student}/messages`` and the re-publish sweep.

A question is stored (``chat.requests`` pending + its student message, one
transaction), published to ``vex.chat.requests`` and echoed to
``vex.feedback``; the answer comes on the stream.

Limits, checked in this order after the token and the body (each a 429 with
a JSON body and ``Retry-After``): the per-student rate limit
(``QUESTION_RATE_LIMIT``, per process) and the cap on unanswered questions
(``QUESTION_MAX_PENDING``, counted in PostgreSQL).  A retried POST of a
question already stored (same ``Idempotency-Key``) is not a new question: it
passes both and re-publishes.

Nothing stored is left unpublished: a question whose publish failed after it
was stored (the POST answered 503) is published again by the page's retry,
or, if the student never retries, by :func:`republish_sweep`, which every
``QUESTION_REPUBLISH_AFTER_S`` publishes pending questions whose student
message was never published.  Publishing twice is harmless: the pipeline
dedupes on the request id, streams and pages on the message id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator

import asyncpg
import orjson
from aiohttp import web
from aiokafka.errors import KafkaError

from delivery.gateway import store
from delivery.gateway.auth import json_error
from delivery.gateway.payloads import MessageView
from delivery.gateway.state import GATEWAY, Gateway
from streams.ids import derived_id
from topology import topics as T
from topology.schemas.base import encode
from topology.schemas.feedback import ChatRequest, FeedbackMessage, Lane

log = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 2000
MAX_SESSION_ID_CHARS = 200
MAX_IDEMPOTENCY_KEY_CHARS = 200
#: How long a student whose questions are all pending is asked to wait.
PENDING_RETRY_AFTER_S = 30
SWEEP_BATCH = 100
_UNAVAILABLE = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, KafkaError, TimeoutError)


async def post_message(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    student = request.match_info["student"]
    claims = gw.auth.student(request, student)
    text, session_id = await _question_body(request, gw.settings.gateway_request_timeout_s)
    request_id = _request_id(request, claims.student_key)
    key = claims.student_key
    try:
        if not await _is_retry(gw, request, request_id):
            await _check_limits(gw, key)
        saved = await store.store_question(
            gw.need_service(), request_id=request_id, student_key=key, session_id=session_id, text=text
        )
        await publish_question(
            gw,
            saved.request_id,
            saved.message,
            student.strip(),
            echo=saved.new_message or not await store.is_published(gw.need_pool(), saved.message.message_id),
        )
    except _UNAVAILABLE as exc:
        log.warning("question %s not accepted: %s: %s", request_id, type(exc).__name__, exc)
        raise json_error(
            web.HTTPServiceUnavailable,
            "unavailable",
            "the question could not be taken right now; send it again "
            "(with the same Idempotency-Key it is stored only once)",
            {"Retry-After": "5"},
        ) from None
    gw.metrics.questions.labels("new" if saved.new_request else "repeat").inc()
    return web.json_response(
        {"request_id": request_id, "message_id": saved.message.message_id, "duplicate": not saved.new_request},
        status=202,
    )


async def _is_retry(gw: Gateway, request: web.Request, request_id: str) -> bool:
    """The POST repeats a stored question (only possible with an Idempotency-Key)."""
    if "Idempotency-Key" not in request.headers:
        return False
    return await store.question_stored(gw.need_pool(), request_id)


async def _check_limits(gw: Gateway, key: str) -> None:
    """429 when the student asks too fast or has too many questions waiting."""
    wait_s = await gw.questions.take(key)
    if wait_s is not None:
        gw.metrics.limited.labels("question_rate").inc()
        raise json_error(
            web.HTTPTooManyRequests,
            "too_many_questions",
            f"that is a lot of questions in a short time; ask again in {wait_s:.0f} s",
            {"Retry-After": str(int(wait_s))},
        )
    cap = gw.settings.question_max_pending
    if await store.pending_count(gw.need_pool(), key) >= cap:
        gw.metrics.limited.labels("question_pending").inc()
        raise json_error(
            web.HTTPTooManyRequests,
            "too_many_pending",
            f"you have {cap} questions waiting for an answer; ask again when one is answered",
            {"Retry-After": str(PENDING_RETRY_AFTER_S)},
        )


async def publish_question(gw: Gateway, request_id: str, message: MessageView, student_id: str, *, echo: bool) -> None:
    """The question to ``vex.chat.requests``; with ``echo``, its student message to
    ``vex.feedback`` too, then marked published."""
    producer, key = gw.need_producer(), message.student_key
    chat = ChatRequest(
        request_id=request_id,
        student_key=key,
        student_id=student_id,
        session_id=message.session_id,
        text=message.text,
        ts=time.time(),
    )
    await producer.send_and_wait(gw.settings.topic(T.CHAT_REQUESTS.name), encode(chat), key=key.encode())
    if echo:
        m = message
        record = FeedbackMessage(
            message_id=m.message_id,
            response_id=m.response_id,
            student_key=key,
            session_id=m.session_id,
            role="student",
            origin=Lane.REACTIVE,
            text=m.text,
            created_at=m.created_ts,
        )
        await producer.send_and_wait(gw.settings.topic(T.FEEDBACK.name), encode(record), key=key.encode())
        await store.mark_published(gw.need_pool(), m.message_id)


async def republish_once(gw: Gateway, *, older_than_s: float, limit: int = SWEEP_BATCH) -> int:
    """Publish pending questions stored ``older_than_s`` ago and never published; returns how many.

    The raw student id is not stored, so the request carries the student key
    in its place (the pipeline keys and answers by the key).
    """
    done = 0
    for q in await store.unpublished_questions(gw.need_pool(), older_than_s=older_than_s, limit=limit):
        message = MessageView(
            message_id=q.message_id,
            response_id=q.request_id,
            student_key=q.student_key,
            session_id=q.session_id,
            role="student",
            origin="reactive",
            text=q.text,
            created_ts=q.created_ts,
        )
        try:
            await publish_question(gw, q.request_id, message, q.student_key, echo=True)
        except _UNAVAILABLE as exc:
            log.warning(
                "re-publishing question %s failed (next sweep tries again): %s: %s",
                q.request_id,
                type(exc).__name__,
                exc,
            )
            gw.metrics.republished.labels("failed").inc()
            break
        gw.metrics.republished.labels("published").inc()
        done += 1
    return done


async def republish_sweep(gw: Gateway) -> None:
    """Run :func:`republish_once` every ``QUESTION_REPUBLISH_AFTER_S`` until cancelled."""
    period = gw.settings.question_republish_after_s
    while True:
        await asyncio.sleep(period)
        try:
            count = await republish_once(gw, older_than_s=period)
        except _UNAVAILABLE as exc:
            log.warning("question re-publish sweep: the database is unavailable: %s: %s", type(exc).__name__, exc)
            continue
        except Exception:  # the sweep must outlive one bad pass; the next one tries again
            log.exception("question re-publish sweep: a pass failed")
            continue
        if count:
            log.info("question re-publish sweep: published %d stored question(s) again", count)


async def _question_body(request: web.Request, timeout_s: float) -> tuple[str, str | None]:
    """``text`` (1..2000 characters, not blank) and an optional ``session_id``.

    The body must arrive within ``timeout_s`` (a client trickling it is refused with 408).
    """
    try:
        async with asyncio.timeout(timeout_s):
            raw = await request.read()
    except TimeoutError:
        request.app[GATEWAY].metrics.limited.labels("request_timeout").inc()
        raise json_error(
            web.HTTPRequestTimeout,
            "request_timeout",
            f"the request body did not arrive within {timeout_s:g} s",
            {"Connection": "close"},
        ) from None
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise json_error(web.HTTPBadRequest, "invalid_json", "the body must be a JSON object") from None
    if not isinstance(body, dict):
        raise json_error(web.HTTPBadRequest, "invalid_json", "the body must be a JSON object")
    text, session_id = body.get("text"), body.get("session_id")
    if text is None:
        raise json_error(web.HTTPUnprocessableEntity, "text_missing", "the field 'text' is required")
    if not isinstance(text, str):
        raise json_error(web.HTTPUnprocessableEntity, "text_not_string", "'text' must be a string")
    text = text.strip()
    if not text:
        raise json_error(web.HTTPUnprocessableEntity, "text_empty", "the question is empty")
    if len(text) > MAX_QUESTION_CHARS:
        raise json_error(
            web.HTTPUnprocessableEntity,
            "text_too_long",
            f"a question has at most {MAX_QUESTION_CHARS} characters (got {len(text)})",
        )
    if session_id is not None and (
        not isinstance(session_id, str) or not session_id.strip() or len(session_id) > MAX_SESSION_ID_CHARS
    ):
        raise json_error(
            web.HTTPUnprocessableEntity,
            "session_id_invalid",
            f"'session_id' must be a non-empty string of at most {MAX_SESSION_ID_CHARS} characters",
        )
    return text, session_id.strip() if isinstance(session_id, str) else None


def _request_id(request: web.Request, student_key: str) -> str:
    """A fresh uuid4, or one derived from the student's ``Idempotency-Key``."""
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return str(uuid.uuid4())
    key = key.strip()
    if not key or len(key) > MAX_IDEMPOTENCY_KEY_CHARS or not key.isprintable():
        raise json_error(
            web.HTTPBadRequest,
            "bad_idempotency_key",
            f"Idempotency-Key must be 1..{MAX_IDEMPOTENCY_KEY_CHARS} printable characters",
        )
    return derived_id("chat-request", student_key, key)


async def sweep_ctx(app: web.Application) -> AsyncIterator[None]:
    """Run :func:`republish_sweep` while the app's clients are open."""
    task = asyncio.create_task(republish_sweep(app[GATEWAY]), name="question-republish-sweep")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
