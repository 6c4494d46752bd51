"""Server-sent events: frame encoding and the open-stream bookkeeping.

Frames follow the WHATWG event-stream format: ``id:``, ``event:`` and one
``data:`` line per line of the payload, ended by a blank line; comments
(``: ...``) are heartbeats that keep proxies and the browser from timing out.

Every open stream is an :class:`OpenStream` registered in the app's
:data:`~delivery.gateway.state.STREAMS` set, so ``on_shutdown`` can end them
all promptly instead of waiting for clients to hang up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web

SSE_HEADERS = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
    "Connection": "keep-alive",
}


def frame(data: str, *, event: str | None = None, event_id: int | None = None) -> bytes:
    """One event frame; ``data`` may span lines (each gets its own ``data:``)."""
    lines: list[str] = []
    if event_id is not None:
        lines.append(f"id: {int(event_id)}")
    if event is not None:
        if "\n" in event or "\r" in event:
            raise ValueError("an event name cannot contain a line break")
        lines.append(f"event: {event}")
    lines.extend(f"data: {line}" for line in data.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    return ("\n".join(lines) + "\n\n").encode("utf-8")


def comment(text: str = "") -> bytes:
    """A comment line (heartbeat); ignored by EventSource."""
    return f": {text}\n\n".encode() if text else b":\n\n"


def retry(ms: int) -> bytes:
    """The reconnection delay the browser should use."""
    return f"retry: {int(ms)}\n\n".encode()


@dataclass(eq=False)
class OpenStream:
    """One client connection: its response, its handler task, its kind."""

    response: web.StreamResponse
    kind: str
    label: str
    task: asyncio.Task[object] | None = None
    closing: asyncio.Event = field(default_factory=asyncio.Event)
    wake: Callable[[], None] | None = None
    """Wakes the stream's loop (it then sees ``closing``)."""
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    """Set by the handler when the stream has ended."""

    def close(self) -> None:
        """Ask the stream to end soon."""
        self.closing.set()
        if self.wake is not None:
            self.wake()

    async def write(self, data: bytes, timeout_s: float) -> None:
        """Write and drain; a client that cannot take ``data`` in time is too slow.

        :raises TimeoutError: the client did not accept the bytes in time.
        :raises ConnectionResetError: the client went away.
        """
        async with asyncio.timeout(timeout_s):
            await self.response.write(data)


def closer(request: web.Request) -> Callable[[], None]:
    """A function that closes the request's connection now (ends a blocked write)."""

    def close() -> None:
        if request.transport is not None:
            request.transport.close()

    return close


async def open_response(request: web.Request, retry_ms: int) -> web.StreamResponse:
    """Send the SSE headers, the ``retry:`` line and an opening comment."""
    response = web.StreamResponse(status=200, headers=SSE_HEADERS)
    await response.prepare(request)
    await response.write(retry(retry_ms) + comment("connected"))
    return response


async def close_all(streams: set[OpenStream], grace_s: float = 2.0) -> None:
    """Ask every open stream to end; cancel the handlers of those that do not in time."""
    pending = [s for s in tuple(streams) if not s.finished.is_set()]
    for stream in pending:
        stream.close()
    if not pending:
        return
    waits = [asyncio.ensure_future(s.finished.wait()) for s in pending]
    _, late = await asyncio.wait(waits, timeout=grace_s)
    for waiter in late:
        waiter.cancel()
    for stream in pending:
        if not stream.finished.is_set() and stream.task is not None and not stream.task.done():
            stream.task.cancel()
