"""The teacher board's stream: ``GET /admin/board/stream``, and its token.

The stream takes a board token (``?board_token=``; EventSource cannot set
headers) minted by ``POST /admin/board/token`` with the admin token in the
Authorization header, or the admin token itself as a header (for clients
that can send one).  The admin token never travels in an address.

On connect: one ``snapshot`` event with the most recent triggers from Postgres
(each with its status, reason and the nudge sent), so a board opened late is
not empty.  Then live: ``trigger`` (from ``vex.triggers``, with evidence),
``outcome`` (from ``vex.nudge.outcomes``: acted, suppressed + reason, failed)
and ``nudge`` (the proactive message text from ``vex.feedback``).  The page
merges them into one row per ``trigger_id``; they may arrive in any order.

Board frames carry no ``id:``: a reconnecting board gets a new snapshot.
The subscription is made before the snapshot is read, so a trigger stored
while the snapshot loads still arrives live (the page merges duplicates).
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from delivery.gateway import payloads as P
from delivery.gateway import sse, store
from delivery.gateway.pubsub import BOARD, Subscription
from delivery.gateway.state import GATEWAY, Gateway, admit_stream, register_stream, unregister_stream

log = logging.getLogger(__name__)

SNAPSHOT_LIMIT = 200


async def board_token(request: web.Request) -> web.Response:
    """``POST /admin/board/token`` (admin token in the header): a board token for the stream."""
    gw = request.app[GATEWAY]
    gw.auth.admin(request)
    token, expires_at = gw.auth.mint_board()
    return web.json_response({"token": token, "expires_at": expires_at}, headers={"Cache-Control": "no-store"})


async def board_stream(request: web.Request) -> web.StreamResponse:
    gw = request.app[GATEWAY]
    slot = admit_stream(gw, gw.auth.board(request), "board")
    sub = gw.hub.subscribe(BOARD, "board", kind="board")
    sub.on_drop = sse.closer(request)
    response: web.StreamResponse | None = None
    out: sse.OpenStream | None = None
    try:
        response = await sse.open_response(request, gw.settings.sse_retry_ms)
        out = sse.OpenStream(response, "board", "board", asyncio.current_task(), wake=sub.interrupt)
        slot.attach(out)
        register_stream(request.app, out)
        rows = await store.board_snapshot(gw.need_pool(), SNAPSHOT_LIMIT)
        await out.write(P.board_frame(P.BOARD_SNAPSHOT, {"triggers": rows}), gw.settings.sse_write_timeout_s)
        await _pump(gw, out, sub)
        if slot.evicted:
            await out.write(P.evicted_frame(gw.settings.sse_max_streams_per_token), gw.settings.sse_write_timeout_s)
    except (ConnectionResetError, TimeoutError) as exc:
        if isinstance(exc, TimeoutError):
            gw.metrics.dropped.labels("board").inc()
            log.warning("dropping slow board client: a write took over %.0f s", gw.settings.sse_write_timeout_s)
    finally:
        gw.slots.give_back(slot)
        gw.hub.unsubscribe(sub)
        if out is not None:
            unregister_stream(request.app, out)
    return response if response is not None else web.Response(status=499)


async def _pump(gw: Gateway, out: sse.OpenStream, sub: Subscription[P.Outgoing]) -> None:
    heartbeat, timeout = gw.settings.sse_heartbeat_s, gw.settings.sse_write_timeout_s
    while not out.closing.is_set():
        try:
            async with asyncio.timeout(heartbeat):
                item = await sub.queue.get()
        except TimeoutError:
            await out.write(sse.comment("ping"), timeout)
            continue
        if item is None:
            return
        await out.write(P.outgoing_frame(item, None), timeout)
        gw.metrics.pushed.labels(item.event).inc()
