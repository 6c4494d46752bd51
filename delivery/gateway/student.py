"""Student routes: the message stream and the question endpoint.

``GET /v1/students/{student}/stream`` (SSE).  The resume cursor is the
``Last-Event-ID`` header, else ``?last_event_id=``; with a cursor the stream
replays exactly the student's messages with a larger id from Postgres, in id
order, then goes live.  Without one it goes live at once (``?since=`` adds the
history created since that time).  Ordering against the live feed: the stream
subscribes to the hub *before* it reads Postgres, then skips live items it
already sent or that the client already had (id ≤ cursor), so a message
stored during the replay is sent exactly once.

Each frame's ``id:`` is the stream cursor: the message id, except for a
message that arrives after a larger id was sent (concurrent writers), whose
frame repeats the larger id so a reconnect never moves backwards.

``POST /v1/students/{student}/messages`` stores a question and publishes it
to ``vex.chat.requests``; the answer comes on the stream.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from datetime import UTC, datetime

import asyncpg
import orjson
from aiohttp import web
from aiokafka.errors import KafkaError

from delivery.gateway import payloads as P
from delivery.gateway import sse, store
from delivery.gateway.auth import json_error
from delivery.gateway.pubsub import Subscription
from delivery.gateway.state import GATEWAY, Gateway, register_stream, unregister_stream
from streams.ids import derived_id
from topology import topics as T
from topology.schemas.base import encode
from topology.schemas.feedback import ChatRequest, FeedbackMessage, Lane

log = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 2000
MAX_SESSION_ID_CHARS = 200
MAX_IDEMPOTENCY_KEY_CHARS = 200
_DELIVERED_CAP = 4096
_BATCH = 64
_ID_RE = re.compile(r"^\d{1,19}$")
_MAX_ID = 2**63 - 1  # a Postgres bigint


class Delivered:
    """Message ids this stream has sent (bounded: the oldest are forgotten)."""

    def __init__(self, floor: int | None) -> None:
        self.floor = floor if floor is not None else -1
        self.ids: set[int] = set()
        self.cursor: int | None = floor

    def seen(self, message_id: int) -> bool:
        return message_id <= self.floor or message_id in self.ids

    def add(self, message_id: int) -> int:
        """Record ``message_id``; returns the cursor for its frame."""
        self.ids.add(message_id)
        if len(self.ids) > _DELIVERED_CAP:
            keep = sorted(self.ids)[_DELIVERED_CAP // 2:]
            self.floor = max(self.floor, keep[0] - 1)
            self.ids = set(keep)
        self.cursor = message_id if self.cursor is None else max(self.cursor, message_id)
        return self.cursor


def resume_cursor(request: web.Request) -> int | None:
    """``Last-Event-ID`` (header wins) or ``?last_event_id=``; 400 when malformed."""
    raw = request.headers.get("Last-Event-ID")
    if raw is None or not raw.strip():
        raw = request.query.get("last_event_id")
    if raw is None or not raw.strip():
        return None
    if not _ID_RE.match(raw.strip()) or int(raw.strip()) > _MAX_ID:
        raise json_error(web.HTTPBadRequest, "bad_last_event_id", "Last-Event-ID must be a message id")
    return int(raw.strip())


def since_param(request: web.Request) -> datetime | None:
    """``?since=`` as an aware time: ISO 8601 or epoch seconds; 400 when malformed."""
    raw = request.query.get("since")
    if not raw:
        return None
    try:
        if re.fullmatch(r"\d+(\.\d+)?", raw):
            return datetime.fromtimestamp(float(raw), UTC)
        moment = datetime.fromisoformat(raw)
    except (ValueError, OverflowError):
        raise json_error(web.HTTPBadRequest, "bad_since",
                         "since must be an ISO 8601 time or epoch seconds") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


async def stream(request: web.Request) -> web.StreamResponse:
    gw = request.app[GATEWAY]
    claims = gw.auth.student(request, request.match_info["student"])
    cursor, since = resume_cursor(request), since_param(request)
    label = f"student={claims.student_key}"
    sub = gw.hub.subscribe(claims.student_key, label)  # before the replay: nothing slips through
    sub.on_drop = sse.closer(request)
    response: web.StreamResponse | None = None
    open_stream: sse.OpenStream | None = None
    try:
        response = await sse.open_response(request, gw.settings.sse_retry_ms)
        open_stream = sse.OpenStream(response, "student", label, asyncio.current_task(),
                                     wake=sub.interrupt)
        register_stream(request.app, open_stream)
        delivered = Delivered(cursor)
        replayed = await _catch_up(gw, open_stream, claims.student_key, cursor, since, delivered)
        await open_stream.write(P.ready_frame(replayed, delivered.cursor), gw.settings.sse_write_timeout_s)
        await _pump(gw, open_stream, sub, delivered)
    except (ConnectionResetError, TimeoutError) as exc:
        if isinstance(exc, TimeoutError):
            gw.metrics.dropped.labels("student").inc()
            log.warning("dropping slow SSE client %s: a write took over %.0f s",
                        label, gw.settings.sse_write_timeout_s)
    finally:
        gw.hub.unsubscribe(sub)
        if open_stream is not None:
            unregister_stream(request.app, open_stream)
    return response if response is not None else web.Response(status=499)


async def _catch_up(gw: Gateway, out: sse.OpenStream, key: str, cursor: int | None,
                    since: datetime | None, delivered: Delivered) -> int:
    """Replay after ``cursor`` (or the history since ``since``); returns how many."""
    timeout, count = gw.settings.sse_write_timeout_s, 0
    if cursor is not None:
        async for view in store.replay(gw.need_pool(), key, cursor):
            await out.write(P.student_frame(view, delivered.add(view.message_id)), timeout)
            count += 1
        gw.metrics.replayed.inc(count)
    elif since is not None:
        for view in await store.history_since(gw.need_pool(), key, since):
            await out.write(P.student_frame(view, delivered.add(view.message_id)), timeout)
            count += 1
    return count


async def _pump(gw: Gateway, out: sse.OpenStream, sub: Subscription[P.Outgoing],
                delivered: Delivered) -> None:
    """Live items to the client, heartbeats when idle, until closed or dropped."""
    heartbeat, timeout = gw.settings.sse_heartbeat_s, gw.settings.sse_write_timeout_s
    while not out.closing.is_set():
        try:
            async with asyncio.timeout(heartbeat):
                first = await sub.queue.get()
        except TimeoutError:
            await out.write(sse.comment("ping"), timeout)
            continue
        items = [first]
        while len(items) < _BATCH and not sub.queue.empty():
            items.append(sub.queue.get_nowait())
        if any(item is None for item in items):
            return
        chunk, fresh = _render(items, delivered)  # type: ignore[arg-type]
        if chunk:
            await out.write(chunk, timeout)
            _observe(gw, fresh)


def _render(items: list[P.Outgoing], delivered: Delivered) -> tuple[bytes, list[P.Outgoing]]:
    parts: list[bytes] = []
    fresh: list[P.Outgoing] = []
    for item in items:
        if item.message_id is None or delivered.seen(item.message_id):
            continue
        parts.append(P.outgoing_frame(item, delivered.add(item.message_id)))
        fresh.append(item)
    return b"".join(parts), fresh


def _observe(gw: Gateway, items: list[P.Outgoing]) -> None:
    now = time.time()
    for item in items:
        gw.metrics.pushed.labels(item.event).inc()
        if item.created_ts is not None:
            gw.metrics.push_seconds.observe(max(0.0, now - item.created_ts))


async def post_message(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    student = request.match_info["student"]
    claims = gw.auth.student(request, student)
    text, session_id = await _question_body(request)
    request_id = _request_id(request, claims.student_key)
    try:
        saved = await store.store_question(gw.need_pool(), request_id=request_id,
                                           student_key=claims.student_key, session_id=session_id,
                                           text=text)
        await _publish_question(gw, saved, student.strip(), claims.student_key)
    except (OSError, asyncpg.PostgresError, KafkaError, TimeoutError) as exc:
        log.warning("question %s not accepted: %s: %s", request_id, type(exc).__name__, exc)
        raise json_error(web.HTTPServiceUnavailable, "unavailable",
                         "the question could not be taken right now; send it again "
                         "(with the same Idempotency-Key it is stored only once)") from None
    gw.metrics.questions.labels("new" if saved.new_request else "repeat").inc()
    return web.json_response({"request_id": request_id, "message_id": saved.message.message_id,
                              "duplicate": not saved.new_request}, status=202)


async def _publish_question(gw: Gateway, saved: store.StoredQuestion, student_id: str, key: str) -> None:
    """The question to ``vex.chat.requests``; its student message to ``vex.feedback`` once."""
    producer = gw.need_producer()
    request_id, session_id, text = saved.request_id, saved.message.session_id, saved.message.text
    chat = ChatRequest(request_id=request_id, student_key=key, student_id=student_id,
                       session_id=session_id, text=text, ts=time.time())
    await producer.send_and_wait(gw.settings.topic(T.CHAT_REQUESTS.name), encode(chat), key=key.encode())
    if saved.new_message:
        m = saved.message
        echo = FeedbackMessage(message_id=m.message_id, response_id=m.response_id, student_key=key,
                               session_id=m.session_id, role="student", origin=Lane.REACTIVE, text=m.text,
                               created_at=m.created_ts)
        await producer.send_and_wait(gw.settings.topic(T.FEEDBACK.name), encode(echo), key=key.encode())
        await store.mark_published(gw.need_pool(), m.message_id)


async def _question_body(request: web.Request) -> tuple[str, str | None]:
    """``text`` (1..2000 characters, not blank) and an optional ``session_id``."""
    try:
        body = orjson.loads(await request.read())
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
        raise json_error(web.HTTPUnprocessableEntity, "text_too_long",
                         f"a question has at most {MAX_QUESTION_CHARS} characters (got {len(text)})")
    if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()
                                   or len(session_id) > MAX_SESSION_ID_CHARS):
        raise json_error(web.HTTPUnprocessableEntity, "session_id_invalid",
                         "'session_id' must be a non-empty string of at most "
                         f"{MAX_SESSION_ID_CHARS} characters")
    return text, session_id.strip() if isinstance(session_id, str) else None


def _request_id(request: web.Request, student_key: str) -> str:
    """A fresh uuid4, or one derived from the student's ``Idempotency-Key``."""
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return str(uuid.uuid4())
    key = key.strip()
    if not key or len(key) > MAX_IDEMPOTENCY_KEY_CHARS or not key.isprintable():
        raise json_error(web.HTTPBadRequest, "bad_idempotency_key",
                         f"Idempotency-Key must be 1..{MAX_IDEMPOTENCY_KEY_CHARS} printable characters")
    return derived_id("chat-request", student_key, key)
