"""The student stream: ``GET /v1/students/{student}/stream`` (SSE).

The resume cursor is the ``Last-Event-ID`` header, else ``?last_event_id=``;
with a cursor the stream replays exactly the student's messages with a larger
id from Postgres, in id order, then goes live.  Without one it goes live at
once (``?since=`` adds the history created since that time).  Ordering
against the live feed: the stream subscribes to the hub *before* it reads
Postgres, then skips live items it already sent or that the client already
had (id ≤ cursor), so a message stored during the replay is sent exactly once.

Each frame's ``id:`` is the stream cursor: the message id, except for a
message that arrives after a larger id was sent (concurrent writers), whose
frame repeats the larger id so a reconnect never moves backwards.

History never keeps a stream from going live: when Postgres cannot be read
(down, or slower than ``SSE_HISTORY_TIMEOUT_S`` for a page) the stream sends
``ready`` with ``history: "pending"`` and goes live; every
``SSE_HISTORY_RETRY_S`` it tries again, and once the history is sent it says
so with a ``history`` event.  Until then frames carry no ``id:``, so the
browser's cursor stays where the history starts and a reconnect loses nothing.

Each student holds at most ``SSE_MAX_STREAMS_PER_TOKEN`` streams (a new one
closes the oldest, which gets an ``evicted`` event first); the process holds
at most ``SSE_MAX_STREAMS`` (503 with ``Retry-After`` past it).

Questions (``POST .../messages``) are in :mod:`delivery.gateway.questions`.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import TypeVar

import asyncpg
from aiohttp import web

from delivery.gateway import payloads as P
from delivery.gateway import sse, store
from delivery.gateway.auth import json_error
from delivery.gateway.pubsub import Subscription
from delivery.gateway.state import GATEWAY, Gateway, admit_stream, register_stream, unregister_stream

log = logging.getLogger(__name__)

_DELIVERED_CAP = 4096
_BATCH = 64
_ID_RE = re.compile(r"^\d{1,19}$")
_MAX_ID = 2**63 - 1  # a Postgres bigint
_DB_ERRORS = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError)
_T = TypeVar("_T")


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
            keep = sorted(self.ids)[_DELIVERED_CAP // 2 :]
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
        raise json_error(web.HTTPBadRequest, "bad_since", "since must be an ISO 8601 time or epoch seconds") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class HistoryUnavailable(Exception):
    """Postgres could not give a stream its history right now."""


class History:
    """What a stream owes from the past: messages after ``cursor``, or since ``since``.

    ``pending`` until it has all been sent; :meth:`send` can be called again
    after a failure and goes on from where it stopped (a replay resumes after
    the last id it read; ``since`` history is read again, deduped by the stream).
    """

    def __init__(self, gw: Gateway, key: str, cursor: int | None, since: datetime | None) -> None:
        self.gw, self.key, self.since = gw, key, since
        self.replay = cursor is not None
        self.position = cursor if cursor is not None else 0
        self.pending = cursor is not None or since is not None
        self.sent = 0

    async def _read(self, query: Awaitable[_T]) -> _T:
        try:
            async with asyncio.timeout(self.gw.settings.sse_history_timeout_s):
                return await query
        except _DB_ERRORS as exc:
            raise HistoryUnavailable(f"{type(exc).__name__}: {exc}") from None

    async def send(self, out: sse.OpenStream, delivered: Delivered, *, hold_ids: bool) -> bool:
        """Send what is owed; ``True`` once complete, ``False`` if Postgres failed (try later)."""
        timeout = self.gw.settings.sse_write_timeout_s
        try:
            while self.pending:
                if self.replay:
                    page = await self._read(store.replay_page(self.gw.need_pool(), self.key, self.position))
                else:
                    assert self.since is not None
                    page = await self._read(store.history_since(self.gw.need_pool(), self.key, self.since))
                for view in page:
                    self.position = max(self.position, view.message_id)
                    if delivered.seen(view.message_id):
                        continue
                    cursor = delivered.add(view.message_id)
                    await out.write(P.student_frame(view, cursor, held=hold_ids), timeout)
                    self.sent += 1
                    if self.replay:
                        self.gw.metrics.replayed.inc()
                self.pending = self.replay and len(page) >= store.REPLAY_PAGE
        except HistoryUnavailable as exc:
            log.warning("stream student=%s: history unavailable (%s); live now, history later", self.key, exc)
            return False
        return True


async def stream(request: web.Request) -> web.StreamResponse:
    gw = request.app[GATEWAY]
    claims = gw.auth.student(request, request.match_info["student"])
    cursor, since = resume_cursor(request), since_param(request)
    slot = admit_stream(gw, f"student:{claims.student_key}", "student")
    label = f"student={claims.student_key}"
    sub = gw.hub.subscribe(claims.student_key, label)  # before the replay: nothing slips through
    sub.on_drop = sse.closer(request)
    response: web.StreamResponse | None = None
    open_stream: sse.OpenStream | None = None
    try:
        response = await sse.open_response(request, gw.settings.sse_retry_ms)
        open_stream = sse.OpenStream(response, "student", label, asyncio.current_task(), wake=sub.interrupt)
        slot.attach(open_stream)
        register_stream(request.app, open_stream)
        delivered = Delivered(cursor)
        history = History(gw, claims.student_key, cursor, since)
        complete = await history.send(open_stream, delivered, hold_ids=False)
        if not complete:
            gw.metrics.history_deferred.inc()
        await open_stream.write(
            P.ready_frame(history.sent, delivered.cursor, history=complete), gw.settings.sse_write_timeout_s
        )
        await _pump(gw, open_stream, sub, delivered, history)
        if slot.evicted:
            await open_stream.write(
                P.evicted_frame(gw.settings.sse_max_streams_per_token), gw.settings.sse_write_timeout_s
            )
    except (ConnectionResetError, TimeoutError) as exc:
        if isinstance(exc, TimeoutError):
            gw.metrics.dropped.labels("student").inc()
            log.warning("dropping slow SSE client %s: a write took over %.0f s", label, gw.settings.sse_write_timeout_s)
    finally:
        gw.slots.give_back(slot)
        gw.hub.unsubscribe(sub)
        if open_stream is not None:
            unregister_stream(request.app, open_stream)
    return response if response is not None else web.Response(status=499)


async def _pump(
    gw: Gateway, out: sse.OpenStream, sub: Subscription[P.Outgoing], delivered: Delivered, history: History
) -> None:
    """Live items to the client, heartbeats when idle, the deferred history when it
    can be read, until closed or dropped."""
    s = gw.settings
    heartbeat, timeout, retry_s = s.sse_heartbeat_s, s.sse_write_timeout_s, s.sse_history_retry_s
    loop = asyncio.get_running_loop()
    last_write, next_try = loop.time(), loop.time() + retry_s
    while not out.closing.is_set():
        now = loop.time()
        if history.pending and now >= next_try:
            if await history.send(out, delivered, hold_ids=True):
                await out.write(P.history_frame(history.sent, delivered.cursor), timeout)
            next_try, last_write = loop.time() + retry_s, loop.time()
            continue
        wait = last_write + heartbeat - now
        if history.pending:
            wait = min(wait, next_try - now)
        try:
            async with asyncio.timeout(max(0.0, wait)):
                first = await sub.queue.get()
        except TimeoutError:
            if loop.time() - last_write >= heartbeat:
                await out.write(sse.comment("ping"), timeout)
                last_write = loop.time()
            continue
        items = [first]
        while len(items) < _BATCH and not sub.queue.empty():
            items.append(sub.queue.get_nowait())
        if any(item is None for item in items):
            return
        chunk, fresh = _render(items, delivered, hold_ids=history.pending)  # type: ignore[arg-type]
        if chunk:
            await out.write(chunk, timeout)
            last_write = loop.time()
            _observe(gw, fresh)


def _render(items: list[P.Outgoing], delivered: Delivered, *, hold_ids: bool) -> tuple[bytes, list[P.Outgoing]]:
    parts: list[bytes] = []
    fresh: list[P.Outgoing] = []
    for item in items:
        if item.message_id is None or delivered.seen(item.message_id):
            continue
        cursor = delivered.add(item.message_id)
        parts.append(P.outgoing_frame(item, None if hold_ids else cursor))
        fresh.append(item)
    return b"".join(parts), fresh


def _observe(gw: Gateway, items: list[P.Outgoing]) -> None:
    now = time.time()
    for item in items:
        gw.metrics.pushed.labels(item.event).inc()
        if item.created_ts is not None:
            gw.metrics.push_seconds.observe(max(0.0, now - item.created_ts))
