"""Publishing typed records to their topics, and dead-lettering failures."""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from streams.agents.pipeline import Pipeline
from streams.deadletters import fitted, original_text
from topology import topics as T
from topology.schemas import (
    DeadLetter,
    RejectReason,
    SchemaError,
    SourceRef,
    TriggerFired,
)
from topology.schemas.base import Record, encode

if TYPE_CHECKING:
    from topology.seam.outbox import Outbox

log = logging.getLogger("vexnudge.agents")


def route(record: Record) -> T.TopicSpec:
    """The topic a record is published on (declared by the topics, :func:`topology.topics.home_of`)."""
    return T.home_of(type(record))


async def publish(
    p: Pipeline,
    record: Record,
    key: str | None,
    spec: T.TopicSpec | None = None,
    partition: int | None = None,
    *,
    outbox: Outbox | None = None,
) -> None:
    """Send one record: enqueued on the worker's producer right away (in order with
    everything else this worker sends), flushed before any offset is committed;
    with an ``outbox`` (the stream agent's), appended to it instead and enqueued
    when the agent sends its outbox (``records_out`` is then counted there).

    Goes to the transport producer directly: Faust's per-message wrapper is the
    largest per-record cost of a worker and adds nothing here (raw bytes, no
    callbacks, no commit-time attachment).  A keyed record goes to the key's
    partition, as the producer's partitioner would send it, without hashing the
    key again for every record.
    """
    spec = spec or route(record)
    if partition is None and key is not None:
        partition = p.partition_of(key)
    if isinstance(record, TriggerFired):
        p.metrics.triggers.labels(record.type.value).inc()
    topic, key_bytes = p.settings.topic(spec.name), key.encode() if key is not None else None
    data = encode(record)
    if isinstance(record, DeadLetter):
        data = fitted(record, data, p.settings.raw_max_bytes)
    if outbox is not None and partition is not None:
        outbox.add(topic, partition, key_bytes, data, label=spec.name)
        return
    try:
        delivery = await p.app.producer.send(topic, key_bytes, data, partition, None, None)
    except Exception:
        p.metrics.publish_failed(spec.name)  # counted (and in /healthz), then raised to the caller
        raise
    if hasattr(delivery, "add_done_callback"):
        delivery.add_done_callback(lambda done: _count_undelivered(p, spec.name, done))
    p.metrics.records_out.labels(spec.name).inc()


def _count_undelivered(p: Pipeline, name: str, done: Any) -> None:
    """Count (and log) a record the broker never took; nobody else awaits its future."""
    if done.cancelled() or done.exception() is None:
        return
    log.error("delivery of a record to %s failed: %r", name, done.exception())
    p.metrics.publish_failed(name)


def count_failed_delivery(p: Pipeline) -> Callable[[str, int, BaseException], None]:
    """An :class:`~topology.seam.outbox.Outbox` callback counting its failed batches
    under the logical topic name."""
    prefix = p.settings.topic_prefix

    def failed(topic: str, records: int, exc: BaseException) -> None:
        p.metrics.publish_failed(topic.removeprefix(prefix) if prefix else topic, records)

    return failed


async def dead_letter_failure(
    p: Pipeline,
    stage: str,
    data: bytes | None,
    source: SourceRef,
    exc: BaseException,
    key: str | None = None,
    *,
    outbox: Outbox | None = None,
) -> None:
    """Record a record that made a stage fail; the worker goes on."""
    log.error("%s failed on %s[%d]@%d: %s", stage, source.topic, source.partition, source.offset, exc)
    p.metrics.processing_errors.labels(stage).inc()
    text, encoding = original_text(data)
    reason = RejectReason.SCHEMA_ERROR if isinstance(exc, SchemaError) else RejectReason.PROCESSING_ERROR
    record = DeadLetter(
        reason=reason,
        stage=stage,  # type: ignore[arg-type]
        detail=f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}",
        original=text,
        original_encoding=encoding,  # type: ignore[arg-type]
        source=source,
        student_key=key,
        dead_lettered_at=time.time(),
    )
    await publish(p, record, key, outbox=outbox)
