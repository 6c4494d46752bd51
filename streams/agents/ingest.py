"""The ingest agent: raw telemetry → ``vex.events`` or ``vex.deadletter``.

Keyed by student on both sides, so a student's events stay in order.  The
per-student memory of accepted envelope ids (the ``ingest-seen`` table)
catches duplicates; every rejected line is dead-lettered with its reason, its
original bytes and where it came from.  A failure on one record dead-letters
it and the agent goes on.
"""

from __future__ import annotations

import time

import orjson

from streams.agents.batching import BatchContext, TableBuffer
from streams.agents.emit import dead_letter_failure, original_text, publish
from streams.ingest import Rejected, SeenIds, decode_line, is_blank
from topology import topics as T
from topology.app import Pipeline
from topology.schemas import DeadLetter, NormalizedEvent, RejectReason, SourceRef

LINE_HEADER = "vex-line"


def source_of(message: object) -> SourceRef:
    """Topic, partition, offset (and file line from the producer's header)."""
    headers = dict(getattr(message, "headers", None) or ())
    line = headers.get(LINE_HEADER)
    return SourceRef(
        topic=message.topic, partition=message.partition, offset=message.offset,  # type: ignore[attr-defined]
        line=int(line) if line else None,
    )




def register(p: Pipeline) -> None:
    context = BatchContext()
    seen_table = TableBuffer(p.tables["ingest-seen"], context)
    window = p.settings.ingest_dedupe_window
    cache: dict[str, SeenIds] = {}

    def seen_ids(student: str) -> SeenIds:
        seen = cache.get(student)
        if seen is None:
            raw = seen_table.get(student.encode())
            seen = cache[student] = SeenIds(orjson.loads(raw) if raw else None, limit=window)
        return seen

    async def handle(value: bytes, source: SourceRef) -> None:
        if is_blank(value):
            p.metrics.ingest_blank.inc()
            return
        out = decode_line(value, source)
        if isinstance(out, NormalizedEvent) and not out.event_id.startswith("h:"):
            seen = seen_ids(out.student_key)
            first = seen.accepted_at(out.event_id)
            if first == source.offset:
                # a re-delivery of the record we accepted (the worker restarted before
                # committing): publish again; the analysis drops the copy by its raw offset
                p.metrics.duplicates_skipped.inc()
                await publish(p, out, out.student_key)
                return
            if first is not None:
                out = Rejected(RejectReason.DUPLICATE_ID,
                               f"envelope id {out.event_id} was already accepted for this student",
                               out.event_id, out.student_key, out.session_id)
            else:
                seen.add(out.event_id, source.offset)
                await publish(p, out, out.student_key)
                seen_table[out.student_key.encode()] = orjson.dumps(seen.to_json())
                p.metrics.ingest_accepted.inc()
                return
        elif isinstance(out, NormalizedEvent):
            await publish(p, out, out.student_key)
            p.metrics.ingest_accepted.inc()
            return
        await _reject(p, out, value, source)

    @p.app.on_partitions_assigned.connect
    async def _reassigned(app: object, assigned: object = None, **kwargs: object) -> None:  # noqa: ARG001
        cache.clear()

    @p.app.agent(p.topic(T.RAW), name="ingest")
    async def ingest(stream):  # type: ignore[no-untyped-def]
        async for events in stream.take_events(p.settings.worker_batch_max, within=p.settings.worker_batch_within_ms / 1000):
            for event in events:
                message = event.message
                context.enter(event)
                p.metrics.records_in.labels(T.RAW.name).inc()
                source = source_of(message)
                try:
                    await handle(message.value or b"", source)
                except Exception as exc:  # noqa: BLE001 - the stage edge: dead-letter and go on
                    cache.clear()  # re-read the ids from the table for the next lines
                    await dead_letter_failure(p, "ingest", message.value, source, exc)
            seen_table.flush()


async def _reject(p: Pipeline, rejected: Rejected, value: bytes, source: SourceRef) -> None:
    text, encoding = original_text(value)
    record = DeadLetter(
        reason=rejected.reason, detail=rejected.detail, stage="ingest", original=text,
        original_encoding=encoding,  # type: ignore[arg-type]
        source=source, event_id=rejected.event_id, student_key=rejected.student_key,
        session_id=rejected.session_id, dead_lettered_at=time.time(),
    )
    p.metrics.ingest_rejected.labels(rejected.reason.value).inc()
    await publish(p, record, rejected.student_key)
