"""Ingest: raw telemetry → ``vex.events`` or ``vex.deadletter`` (part of the stream agent).

Keyed by student on both sides, so a student's events stay in order.  The
per-student memory of accepted envelope ids (the ``ingest-seen`` table)
catches duplicates; every rejected line is dead-lettered with its reason, its
original bytes and where it came from.  A failure on one record dead-letters
it and the agent goes on.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from streams.agents.batching import BatchContext, TableBuffer
from streams.agents.emit import publish
from streams.agents.pipeline import Pipeline
from streams.deadletters import original_text
from streams.dedupe import Verdict, check, duplicate_of, remember, window_of
from streams.ingest import Rejected, SeenIds, decode_line, is_blank
from streams.screen import Limits, bounded
from topology.schemas import DeadLetter, NormalizedEvent, SourceRef
from topology.seam.outbox import Outbox

LINE_HEADER = "vex-line"


def source_of(message: Any) -> SourceRef:
    """Topic, partition, offset (and file line from the producer's header) of a consumed record."""
    headers = dict(getattr(message, "headers", None) or ())
    line = headers.get(LINE_HEADER)
    return SourceRef(
        topic=message.topic,
        partition=message.partition,
        offset=message.offset,
        line=int(line) if line else None,
    )


class Ingest:
    """The ingest handler of the stream agent: one raw line at a time.

    Publishes each accepted event on ``vex.events`` (and a re-delivered one
    again) and returns it for the analysis; rejected lines go to the
    dead-letter topic.  Writes to the ``ingest-seen`` table are buffered until
    :meth:`flush`, after the batch's outputs.
    """

    def __init__(self, p: Pipeline, context: BatchContext) -> None:
        self.p = p
        self.seen_table = TableBuffer(p.tables["ingest-seen"], context, p.app.producer)
        self.outbox = context.outbox
        self.window = p.settings.ingest_dedupe_window
        self.limits = Limits.from_settings(p.settings)
        self.live = p.settings.clock_mode == "live"
        self.cache: dict[str, SeenIds] = {}
        self.dirty: set[str] = set()

    def seen_ids(self, student: str) -> SeenIds:
        seen = self.cache.get(student)
        if seen is None:
            raw = self.seen_table.get(student.encode())
            seen = self.cache[student] = SeenIds(orjson.loads(raw) if raw else None, limit=self.window)
        return seen

    async def on_raw(self, value: bytes, source: SourceRef) -> NormalizedEvent | None:
        """Validate one raw line; the event to analyse, or None (blank or rejected)."""
        if is_blank(value):
            self.p.metrics.ingest_blank.inc()
            return None
        out = decode_line(value, source, self.limits, time.time() if self.live else None)
        student = window_of(out)
        seen = self.seen_ids(student) if student is not None else None
        verdict = check(out, seen, source.offset)
        if verdict is Verdict.DUPLICATE:
            out = duplicate_of(out)
        if isinstance(out, Rejected):
            await _reject(self.p, out, value, source, self.outbox)
            return None
        if verdict is Verdict.REDELIVERY:
            # the record we accepted, read again (the worker restarted before
            # committing): publish again; the analysis drops it by its raw offset
            self.p.metrics.duplicates_skipped.inc()
            await publish(self.p, out, out.student_key, outbox=self.outbox)
            return out
        await publish(self.p, out, out.student_key, outbox=self.outbox)
        if seen is not None and remember(seen, out, source.offset):
            self.seen_table[out.student_key.encode()] = b""  # placeholder: serialized at flush
            self.dirty.add(out.student_key)
        self.p.metrics.ingest_accepted.inc()
        return out

    def _serialize(self) -> None:
        """Put the serialized window of every student changed since the last call."""
        for student in self.dirty:
            key = student.encode()
            _placeholder, event = self.seen_table.pending[key]
            self.seen_table.pending[key] = (self.cache[student].to_bytes(), event)
        self.dirty.clear()

    async def flush(self) -> None:
        """Write the batch's changed id windows (each serialized once per batch)."""
        self._serialize()
        await self.seen_table.flush()

    def forget(self) -> None:
        """Drop the cached windows (partitions moved, or a line failed midway);
        the batch's pending writes stay and are flushed with it."""
        self._serialize()
        self.cache.clear()


async def _reject(p: Pipeline, rejected: Rejected, value: bytes, source: SourceRef, outbox: Outbox) -> None:
    text, encoding = original_text(value)
    key = bounded(rejected.student_key)
    record = DeadLetter(
        reason=rejected.reason,
        detail=rejected.detail,
        stage="ingest",
        original=text,
        original_encoding=encoding,  # type: ignore[arg-type]
        source=source,
        event_id=bounded(rejected.event_id),
        student_key=key,
        session_id=bounded(rejected.session_id),
        dead_lettered_at=time.time(),
    )
    p.metrics.ingest_rejected.labels(rejected.reason.value).inc()
    await publish(p, record, key, outbox=outbox)
