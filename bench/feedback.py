"""Benchmark: latency of the feedback stage with the fake Ollama server.

Run ``.venv/bin/python bench/feedback.py`` with the local stack up
(``vexnudge stack up``; the usual KAFKA_PORT / POSTGRES_PORT / DATABASE_URL
environment applies).  ``--quick`` runs 40 requests instead of 200.

What runs: a throwaway database with every migration; the fake Ollama as a
separate process (``--model-delay`` seconds per answer, 0 by default, so the
figures are our own overhead plus one real HTTP round trip); the real
:class:`~feedback.llm.OllamaClient` and :class:`~feedback.service.FeedbackService`;
``publish`` sends to the real broker (``send_and_wait`` on a throwaway topic)
unless ``--publish memory``.

Phases, each over N requests, ``--concurrency`` at a time:

1. ``nudge``: first delivery of N proactive requests (N students, one fire each);
2. ``replay``: the same N requests again (stored state re-published, no model call);
3. ``question``: N reactive questions.

Figures per phase: the model call (:class:`DeliveryTiming.model_s`), the service
time to the stored reply (``service_s``), and end to end (``handle()`` entered →
stored → published), as median / p95 / p99 / max in milliseconds, plus throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

# This script is named like the package it measures: drop its own folder from
# the import path so ``import feedback`` finds the package, not this file.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import asyncpg
import httpx
from aiokafka import AIOKafkaProducer

from delivery.db import open_pool
from feedback.llm import OllamaClient
from feedback.service import DeliveryTiming, FeedbackService, Published
from streams.ids import derived_id, trigger_id
from tests.fakes.process import fake_ollama_subprocess
from tests.fakes.scratch_db import scratch_database
from tests.unit.feedback.prompt_cases import METRICS, PROGRAM
from topology.kafka_admin import ensure_topics
from topology.schemas.analysis import TriggerEvidence, TriggerFired, TriggerType
from topology.schemas.base import encode
from topology.schemas.feedback import FeedbackRequest, Lane
from topology.settings import Settings, load_settings


@dataclass
class Phase:
    """Samples (seconds) of one phase."""

    name: str
    model: list[float] = field(default_factory=list)
    service: list[float] = field(default_factory=list)
    end_to_end: list[float] = field(default_factory=list)
    wall: float = 0.0


class Collector:
    """The service's metrics hook: keeps the timings of the running phase."""

    def __init__(self) -> None:
        self.phase = Phase("none")

    def model_call(self, seconds: float, *, ok: bool, error: str | None) -> None:
        if not ok:
            raise RuntimeError(f"model call failed in the benchmark: {error}")

    def outcome(self, status: str, lane: Lane) -> None:
        return None

    def delivered(self, timing: DeliveryTiming) -> None:
        self.phase.model.append(timing.model_s)
        self.phase.service.append(timing.service_s)


def proactive(student: str, now: float) -> FeedbackRequest:
    trigger = TriggerFired(
        trigger_id=trigger_id(student, "s1", "wheel_spin", run_index=6),
        type=TriggerType.WHEEL_SPIN,
        student_key=student,
        student_id=student,
        session_id="s1",
        run_index=6,
        alert=None,
        ts=now,
        timestamp="2026-05-06T09:14:07Z",
        playground="GO-Mars",
        event_id="1",
        detail="6 identical reruns",
        evidence=TriggerEvidence(recent_distances=[0] * 6, zero_streak=6),
    )
    return FeedbackRequest(
        request_id=derived_id("feedback", trigger.trigger_id),
        lane=Lane.PROACTIVE,
        student_key=student,
        student_id=student,
        session_id="s1",
        playground="GO-Mars",
        ts=now,
        trigger=trigger,
        metrics=METRICS,
        program_xml=PROGRAM,
    )


def question(student: str, now: float) -> FeedbackRequest:
    chat_id = str(uuid.uuid4())
    return FeedbackRequest(
        request_id=derived_id("feedback", chat_id),
        lane=Lane.REACTIVE,
        student_key=student,
        student_id=student,
        session_id="s1",
        playground="GO-Mars",
        ts=now,
        question="why does my robot stop before the crater?",
        chat_request_id=chat_id,
        metrics=METRICS,
        program_xml=PROGRAM,
    )


async def run_phase(
    service: FeedbackService,
    collector: Collector,
    name: str,
    requests: list[FeedbackRequest],
    concurrency: int,
) -> Phase:
    collector.phase = phase = Phase(name)
    gate = asyncio.Semaphore(concurrency)

    async def one(request: FeedbackRequest) -> None:
        async with gate:
            started = time.perf_counter()
            await service.handle(request)
            phase.end_to_end.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(one(r) for r in requests))
    phase.wall = time.perf_counter() - started
    return phase


async def check_once(pool: asyncpg.Pool, url: str, *, nudges: int, calls: int) -> None:
    """Every nudge stored once, and one model call per first delivery (none for replays)."""
    stored = await pool.fetchval("select count(*) from chat.messages where origin = 'proactive' and role = 'assistant'")
    async with httpx.AsyncClient() as client:
        made = (await client.get(f"{url}/_control")).json()["chat_calls"]
    if (stored, made) != (nudges, calls):
        raise SystemExit(f"expected {nudges} nudges and {calls} model calls, got {stored}, {made}")
    print(f"# checked: {stored} nudges stored, {made} model calls (none for the replays)")


def _ms(values: list[float], q: float) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:.1f}"


def report(phases: list[Phase]) -> None:
    print("| phase | n | what | median ms | p95 ms | p99 ms | max ms | per s |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for ph in phases:
        rate = f"{len(ph.end_to_end) / ph.wall:.0f}" if ph.wall else "-"
        rows = [("model call", ph.model), ("to stored", ph.service), ("end to end", ph.end_to_end)]
        for what, values in rows:
            if not values:
                continue
            median = f"{statistics.median(values) * 1000:.1f}"
            print(
                f"| {ph.name} | {len(values)} | {what} | {median} | {_ms(values, 0.95)} | "
                f"{_ms(values, 0.99)} | {max(values) * 1000:.1f} | "
                f"{rate if what == 'end to end' else ''} |"
            )


async def _publisher(
    settings: Settings, kind: str
) -> tuple[Callable[[Published], Awaitable[None]], Callable[[], Awaitable[None]]]:
    if kind == "memory":
        sink: list[Published] = []

        async def keep(record: Published) -> None:
            sink.append(record)

        async def nothing() -> None:
            return None

        return keep, nothing
    topic = settings.topic("vex.feedback")
    await ensure_topics(settings, [topic])
    producer = AIOKafkaProducer(
        bootstrap_servers=settings.kafka_bootstrap_servers, enable_idempotence=True, linger_ms=0
    )
    await producer.start()

    async def send(record: Published) -> None:
        await producer.send_and_wait(topic, encode(record), key=record.student_key.encode())

    return send, producer.stop


async def bench(settings: Settings, url: str, args: argparse.Namespace) -> list[Phase]:
    collector = Collector()
    publish, close = await _publisher(settings, args.publish)
    try:
        async with open_pool(settings, min_size=4, max_size=args.concurrency + 4) as pool:
            llm = OllamaClient.from_settings(settings, host=url, concurrency=args.concurrency)
            service = FeedbackService(pool, llm, settings, publish, metrics=collector)
            run = uuid.uuid4().hex[:6]
            students = [f"bench-{run}-{i}" for i in range(args.n)]
            warm = [proactive(f"warm-{run}-{i}", time.time()) for i in range(5)]
            await run_phase(service, collector, "warm-up", warm, args.concurrency)
            nudges = [proactive(s, time.time()) for s in students]
            phases = [await run_phase(service, collector, "nudge", nudges, args.concurrency)]
            phases.append(await run_phase(service, collector, "replay", nudges, args.concurrency))
            asks = [question(s, time.time()) for s in students]
            phases.append(await run_phase(service, collector, "question", asks, args.concurrency))
            await llm.aclose()
            await check_once(pool, url, nudges=args.n + len(warm), calls=2 * args.n + len(warm))
    finally:
        await close()
    return phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="requests per phase (default 200)")
    parser.add_argument("--quick", action="store_true", help="40 requests per phase")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight")
    parser.add_argument("--model-delay", type=float, default=0.0, help="fake model seconds")
    parser.add_argument("--publish", choices=["kafka", "memory"], default="kafka")
    args = parser.parse_args()
    if args.quick:
        args.n = 40
    base = load_settings()
    prefix = f"bench-{uuid.uuid4().hex[:6]}."
    with scratch_database(base, "vexnudge_bench") as db, fake_ollama_subprocess(delay_s=args.model_delay) as url:
        settings = db.model_copy(update={"topic_prefix": prefix, "llm_fallback_template": False})
        phases = asyncio.run(bench(settings, url, args))
    print(
        f"# feedback benchmark: n={args.n} concurrency={args.concurrency} "
        f"model_delay={args.model_delay}s publish={args.publish} "
        f"python={platform.python_version()} {platform.machine()}"
    )
    report(phases)


if __name__ == "__main__":
    main()
