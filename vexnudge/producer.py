"""Publishing recorded telemetry to the raw topic (the ``produce`` tool's engine).

Each line is keyed by its student key (the same rule ingest uses), carries its
1-based line number in the ``vex-line`` header, and is sent by an idempotent
producer, so a retried send never duplicates a line.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import orjson
from aiokafka import AIOKafkaProducer

from streams.deadletters import original_text, truncated
from streams.ingest import Rejected, decode_line, is_blank, parse_timestamp, routing_key
from streams.screen import Limits, bounded
from topology import topics as T
from topology.schemas import DeadLetter, SourceRef
from topology.schemas.base import encode
from topology.settings import Settings

LINE_HEADER = "vex-line"


@dataclass
class ProduceStats:
    """What a produce run did."""

    lines: int = 0
    sent: int = 0
    skipped: int = 0
    dead_lettered: int = 0
    """Lines too large for the broker, dead-lettered here instead of sent."""
    bytes: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.sent / self.seconds if self.seconds > 0 else 0.0


def recorded_time(line: bytes) -> float | None:
    """The line's receive time (else event time), for paced replays."""
    try:
        envelope = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(envelope, dict):
        return None
    for value in (envelope.get("received_at"), envelope.get("recieved_at")):
        if isinstance(value, str) and (moment := parse_timestamp(value)):
            return moment.timestamp()
    return None


def make_producer(settings: Settings) -> AIOKafkaProducer:
    """The raw-topic producer: idempotent, batched."""
    return AIOKafkaProducer(
        bootstrap_servers=settings.kafka_bootstrap_servers,
        enable_idempotence=True,
        linger_ms=5,
        max_batch_size=262144,
        max_request_size=4 * 1024 * 1024,
    )


async def produce_lines(
    settings: Settings,
    lines: Sequence[bytes],
    *,
    speed: float | None = None,
    rate: float | None = None,
    skip_invalid: bool = False,
    on_progress: Callable[[ProduceStats], None] | None = None,
    first_line: int = 1,
    numbers: Sequence[int] | None = None,
) -> ProduceStats:
    """Send ``lines`` to the raw topic, as fast as possible or paced.

    :param speed: replay at ``speed`` times the recorded pace (receive times).
    :param rate: send at a steady number of lines per second.
    :param skip_invalid: drop lines ingest would reject instead of sending them.
    :param first_line: the file line number of ``lines[0]`` (a file sent in parts).
    :param numbers: each line's file line number, when ``lines`` are not in file order
        (``vexnudge.disorder.arrival_order``); replaces ``first_line``.  Pacing follows
        the order of ``lines``: with ``speed``, a line recorded earlier than one
        already sent goes at once.
    """
    if numbers is not None and len(numbers) != len(lines):
        raise ValueError(f"{len(numbers)} line numbers for {len(lines)} lines")
    stats, topic = ProduceStats(), settings.topic(T.RAW.name)
    producer = make_producer(settings)
    await producer.start()
    started = time.perf_counter()
    first_recorded: float | None = None
    try:
        pending: list[asyncio.Future[object]] = []
        for sent, line in enumerate(lines, start=1):
            number = numbers[sent - 1] if numbers is not None else first_line + sent - 1
            stats.lines += 1
            if skip_invalid and (not line.strip() or isinstance(decode_line(line), Rejected)):
                stats.skipped += 1
                continue
            if len(line) > settings.raw_max_bytes:
                stats.dead_lettered += await _refuse_oversize(producer, settings, line, number)
                continue
            if speed is not None and first_recorded is None:
                first_recorded = recorded_time(line)
            delay = _delay(sent, line, started, speed, rate, first_recorded)
            if delay > 0:
                await asyncio.sleep(delay)
            key = routing_key(line)
            pending.append(
                await producer.send(
                    topic, value=line, key=key.encode() if key else None, headers=[(LINE_HEADER, str(number).encode())]
                )
            )
            stats.sent += 1
            stats.bytes += len(line)
            if len(pending) >= 1000:
                await asyncio.gather(*pending)
                pending.clear()
                if on_progress:
                    stats.seconds = time.perf_counter() - started
                    on_progress(stats)
        await producer.flush()
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    stats.seconds = time.perf_counter() - started
    if on_progress:
        on_progress(stats)  # the last lines, fewer than a report's 1,000
    return stats


async def _refuse_oversize(producer: AIOKafkaProducer, settings: Settings, line: bytes, number: int) -> int:
    """A line the broker cannot carry: dead-letter it here, as ingest would
    (its reason by the same checks; the original truncated with its length and
    SHA-256).  A blank one is skipped, as ingest skips it.  Returns 1 if sent."""
    if is_blank(line):
        return 0
    out = decode_line(line, limits=Limits.from_settings(settings))
    assert isinstance(out, Rejected), "a line over RAW_MAX_BYTES is never accepted"
    text, encoding = original_text(line)
    topic = settings.topic(T.RAW.name)
    key = bounded(out.student_key)
    record = truncated(
        DeadLetter(
            reason=out.reason,
            detail=out.detail + " (refused by the producer: the broker cannot carry it)",
            stage="ingest",
            original=text,
            original_encoding=encoding,  # type: ignore[arg-type]
            source=SourceRef(topic=topic, partition=-1, offset=-1, line=number),
            event_id=bounded(out.event_id),
            student_key=key,
            session_id=bounded(out.session_id),
            dead_lettered_at=time.time(),
        )
    )
    await producer.send_and_wait(
        settings.topic(T.DEADLETTER.name), value=encode(record), key=key.encode() if key else None
    )
    return 1


def _delay(
    number: int, line: bytes, started: float, speed: float | None, rate: float | None, first_recorded: float | None
) -> float:
    """Seconds to wait before sending line ``number`` to keep the pace."""
    elapsed = time.perf_counter() - started
    if rate:
        return (number - 1) / rate - elapsed
    if speed and first_recorded is not None:
        at = recorded_time(line)
        if at is not None:
            return (at - first_recorded) / speed - elapsed
    return 0.0
