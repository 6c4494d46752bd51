"""A minimal event-stream reader (for tests, the benchmark and smoke checks).

:class:`SseParser` turns bytes into :class:`SseEvent`s following the WHATWG
parsing rules that matter here: ``id``, ``event``, ``data`` (joined with
newlines), ``retry``, comments, and blank-line dispatch.  It keeps the last
event id like a browser does, so a caller can reconnect with it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event, or a comment (``event == ""`` and ``comment`` set)."""

    event: str
    data: str
    id: str | None = None
    comment: str | None = None
    retry: int | None = None

    def json(self) -> Any:
        return json.loads(self.data)


@dataclass
class SseParser:
    """Incremental parser; feed it chunks, collect events."""

    last_event_id: str | None = None
    retry_ms: int | None = None
    _buffer: str = ""
    _data: list[str] = field(default_factory=list)
    _event: str = ""
    _id: str | None = None
    _has_id: bool = False

    def feed(self, chunk: bytes | str) -> list[SseEvent]:
        """Parse ``chunk``; returns the events (and comments) it completed."""
        text = chunk.decode("utf-8") if isinstance(chunk, bytes) else chunk
        self._buffer += text.replace("\r\n", "\n").replace("\r", "\n")
        out: list[SseEvent] = []
        while "\n" in self._buffer:
            line, self._buffer = self._buffer.split("\n", 1)
            event = self._line(line)
            if event is not None:
                out.append(event)
        return out

    def _line(self, line: str) -> SseEvent | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return SseEvent("", "", comment=line[1:].strip())
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id, self._has_id = value, True
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
            return SseEvent("", "", retry=int(value))
        return None

    def _dispatch(self) -> SseEvent | None:
        if self._has_id:
            self.last_event_id = self._id
        if not self._data:
            self._event, self._has_id = "", False
            return None
        event = SseEvent(self._event or "message", "\n".join(self._data), self._id if self._has_id else None)
        self._data, self._event, self._has_id = [], "", False
        return event


async def events(
    response: aiohttp.ClientResponse, parser: SseParser | None = None, *, comments: bool = False
) -> AsyncIterator[SseEvent]:
    """The events of an open streaming response, as they arrive."""
    parser = parser or SseParser()
    async for chunk in response.content.iter_any():
        for event in parser.feed(chunk):
            if event.comment is not None or event.retry is not None:
                if comments:
                    yield event
                continue
            yield event
