"""Benchmark: SSE fan-out of the gateway to many concurrent students.

Run ``.venv/bin/python bench/sse.py`` with the local stack up
(``vexnudge stack up``; the same STACK_DIR / KAFKA_PORT / POSTGRES_PORT).

What it does, all on loopback:

1. starts a real gateway process (``vexnudge gateway``) on its own topics;
2. opens ``--clients`` SSE streams (one student each, each with its own token)
   and waits until every stream reported ``ready``;
3. for each student, stores one nudge in ``chat.messages`` and publishes it
   to ``vex.feedback`` exactly as the feedback service does, either paced
   (``--rate`` messages per second) or all at once (``--burst``);
4. checks that every client received exactly its own message, once;
5. reports latency percentiles from the message's ``created_at`` (stored)
   and from the moment it was handed to the producer, to the moment the
   client read the frame; and the gateway's RSS before and after;
6. the **baseline**, in the same run (``--no-baseline`` skips it): the same
   nudges stored and published the same way to fresh topics, read by a plain
   group-less aiokafka consumer in this process (the gateway's consumer
   settings, no gateway, no SSE); publish → consumer read percentiles, and
   the ratio of the gateway's publish → client p50/p99 to them.

The clients run in this process (their loop only reads); storing and
publishing run in a child process; the gateway, the broker and PostgreSQL
run in their own processes, all on the same 2 cores.  Every time is the
wall clock of the one machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import platform
import resource
import secrets
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path

# Sibling benchmarks are named like packages (bench/tree_edit.py): keep this
# script's folder off the import path.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import aiohttp
import asyncpg
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from delivery.db import create_pool
from delivery.gateway import tokens
from delivery.gateway.client import SseParser
from delivery.repo import messages as repo_messages
from topology import topics as T
from topology.kafka_admin import ensure_topics
from topology.schemas.base import encode
from topology.schemas.feedback import FeedbackMessage, Lane
from topology.settings import Settings, load_settings
from vexnudge.gatewayproc import GatewayProcess


@dataclass
class Client:
    """One student's open stream and what it saw."""

    student: str
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    got: list[tuple[float, dict[str, object]]] = field(default_factory=list)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    error: str | None = None


def raise_nofile(wanted: int) -> int:
    """Raise the soft open-file limit towards ``wanted`` (up to the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(max(soft, wanted), hard) if hard != resource.RLIM_INFINITY else max(soft, wanted)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return target


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


async def listen(http: aiohttp.ClientSession, url: str, token: str, client: Client) -> None:
    """Hold one stream open; note the arrival time of every message frame."""
    parser = SseParser()
    try:
        async with http.get(url, params={"token": token}) as response:
            if response.status != 200:
                client.error = f"HTTP {response.status}"
                client.ready.set()
                return
            async for chunk in response.content.iter_any():
                now = time.time()
                for event in parser.feed(chunk):
                    if event.event == "ready":
                        client.ready.set()
                    elif event.event == "assistant_message":
                        client.got.append((now, json.loads(event.data)))
                        client.done.set()
    except (aiohttp.ClientError, asyncio.CancelledError) as exc:
        if not isinstance(exc, asyncio.CancelledError):
            client.error = repr(exc)
        client.ready.set()


async def publish_all(
    settings: Settings, students: list[str], rate: float | None, go: Callable[[], Awaitable[None]] | None = None
) -> dict[int, float]:
    """Store one nudge per student and publish it; returns each message's publish time.

    Paced (``rate``): store, then publish, one message every 1/rate s.
    Burst (``rate`` None): store every message first, then publish them all
    back to back (the latency then starts at the publish, not at the insert).
    ``go`` is awaited once the clients are connected to Postgres and Kafka.
    """
    pool = await create_pool(settings, min_size=2, max_size=4)
    producer = AIOKafkaProducer(
        bootstrap_servers=settings.kafka_bootstrap_servers, enable_idempotence=True, linger_ms=0
    )
    await producer.start()
    topic = settings.topic(T.FEEDBACK.name)
    sent_at: dict[int, float] = {}
    try:
        warm = await _store(pool, f"warm-{uuid.uuid4().hex[:6]}", "warm-up")
        await repo_messages.mark_published(pool, [warm.message_id])  # never to be swept and sent
        if go is not None:
            await go()
        start = time.monotonic()
        records: list[FeedbackMessage] = []
        for i, student in enumerate(students):
            if rate:
                await asyncio.sleep(max(0.0, start + i / rate - time.monotonic()))
            record = await _store(pool, student, f"Nudge {i}: try changing one value and run again.")
            if rate:
                sent_at[record.message_id] = time.time()
                await producer.send(topic, encode(record), key=record.student_key.encode())
            else:
                records.append(record)
        for record in records:
            sent_at[record.message_id] = time.time()
            await producer.send(topic, encode(record), key=record.student_key.encode())
        await producer.flush()
        await repo_messages.mark_published(pool, list(sent_at))
    finally:
        await producer.stop()
        await pool.close()
    return sent_at


async def _store(pool: asyncpg.Pool, student: str, text: str) -> FeedbackMessage:
    """Insert the nudge row; the record the feedback service would publish for it."""
    stored = await repo_messages.insert_message(
        pool,
        response_id=str(uuid.uuid4()),
        student_key=student,
        session_id="bench",
        role="assistant",
        text=text,
        origin="proactive",
        classes=["ELABORATE"],
        model="template",
    )
    return FeedbackMessage(
        message_id=stored.id,
        response_id=stored.response_id,
        student_key=student,
        session_id="bench",
        role="assistant",
        origin=Lane.PROACTIVE,
        text=text,
        feedback_classes=["ELABORATE"],
        model="template",
        created_at=stored.created_at,
    )


def _publisher_process(settings_json: str, students: list[str], rate: float | None, conn: Connection) -> None:
    """Child process: connect, say ready, wait for go, store and publish, report the times."""
    settings = Settings.model_validate_json(settings_json)

    async def go() -> None:
        conn.send("ready")
        await asyncio.to_thread(conn.recv)

    conn.send(asyncio.run(publish_all(settings, students, rate, go)))
    conn.close()


class Publisher:
    """:func:`publish_all` in its own process, so the clients' loop only reads."""

    def __init__(self, settings: Settings, students: list[str], rate: float | None) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, theirs = ctx.Pipe()
        data = settings.model_dump(mode="json")
        data["database_url"] = settings.database_url.get_secret_value()
        for secret in ("token_secret", "admin_token"):
            data.pop(secret, None)
        self.child = ctx.Process(target=_publisher_process, args=(json.dumps(data), students, rate, theirs))
        self.child.start()
        theirs.close()

    async def ready(self) -> None:
        if await asyncio.to_thread(self.conn.recv) != "ready":
            raise RuntimeError("the publisher process failed to start")

    async def run(self) -> dict[int, float]:
        self.conn.send("go")
        sent_at: dict[int, float] = await asyncio.to_thread(self.conn.recv)
        await asyncio.to_thread(self.child.join, 30)
        return sent_at


async def run(args: argparse.Namespace) -> dict[str, object]:
    base = load_settings()
    settings = base.model_copy(update={"topic_prefix": f"bench-{uuid.uuid4().hex[:8]}."})
    nofile = raise_nofile(args.clients * 2 + 256)
    await ensure_topics(
        settings,
        [settings.topic(n) for n in (T.FEEDBACK.name, T.TRIGGERS.name, T.NUDGE_OUTCOMES.name, T.CHAT_REQUESTS.name)],
    )
    secret, admin = secrets.token_hex(32), secrets.token_hex(16)
    gateway = GatewayProcess(settings, secret, admin, port=args.port, loglevel="warning").start()
    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    timeout = aiohttp.ClientTimeout(total=None, sock_read=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        tasks: list[asyncio.Task[None]] = []
        try:
            await asyncio.to_thread(gateway.wait_healthy)
            await asyncio.sleep(1.0)
            pid = gateway.process.pid if gateway.process else 0
            rss_before = rss_mib(pid)
            run_id = uuid.uuid4().hex[:6]
            clients = [Client(f"bench-{run_id}-{i:04d}") for i in range(args.clients)]
            url = f"{gateway.base_url}/v1/students/{{}}/stream"
            connect_start = time.monotonic()
            for client in clients:
                token = tokens.issue(secret.encode(), client.student, ttl_s=3600, now=time.time())
                tasks.append(asyncio.create_task(listen(http, url.format(client.student), token, client)))
            await asyncio.wait_for(asyncio.gather(*(c.ready.wait() for c in clients)), 120)
            connect_s = time.monotonic() - connect_start
            errors = [c.error for c in clients if c.error]
            if errors:
                raise RuntimeError(f"{len(errors)} clients failed to connect, e.g. {errors[0]}")
            rss_connected = rss_mib(pid)
            publisher = Publisher(settings, [c.student for c in clients], None if args.burst else args.rate)
            await publisher.ready()
            pub_start = time.monotonic()
            sent_at = await publisher.run()
            publish_s = time.monotonic() - pub_start
            with contextlib.suppress(TimeoutError):  # the summary counts what is missing
                await asyncio.wait_for(asyncio.gather(*(c.done.wait() for c in clients)), args.wait)
            await asyncio.sleep(0.5)  # anything extra (a duplicate) would arrive by now
            rss_after = rss_mib(pid)
            async with http.get(f"{gateway.base_url}/metrics") as response:
                metrics_text = await response.text()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            gateway.stop()
    result = summarize(
        args, clients, sent_at, rss_before, rss_connected, rss_after, connect_s, publish_s, nofile, metrics_text
    )
    if not args.no_baseline:
        values = await baseline(settings, [f"base-{c.student}" for c in clients], None if args.burst else args.rate)
        result["baseline_delivered"] = len(values)
        if values:
            result["baseline_publish_to_consumer_ms"] = {
                "p50": round(pct(values, 50), 1),
                "p90": round(pct(values, 90), 1),
                "p99": round(pct(values, 99), 1),
                "max": round(max(values), 1),
            }
            gw = result.get("publish_to_client_ms")
            if isinstance(gw, dict):
                result["gateway_vs_baseline"] = {
                    q: round(gw[q] / max(pct(values, n), 0.01), 2) for q, n in (("p50", 50), ("p99", 99))
                }
    return result


async def baseline(base: Settings, students: list[str], rate: float | None) -> list[float]:
    """Publish → read latencies (ms) of the same nudges through Kafka alone."""
    settings = base.model_copy(update={"topic_prefix": f"bench-{uuid.uuid4().hex[:8]}."})
    topic = settings.topic(T.FEEDBACK.name)
    await ensure_topics(settings, [topic])
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap_servers,
        group_id=None,
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
        max_poll_records=1000,
    )
    await consumer.start()
    received: dict[int, float] = {}
    try:
        tps = [TopicPartition(topic, p) for p in range(settings.topic_partitions)]
        consumer.assign(tps)
        await consumer.seek_to_end(*tps)
        for tp in tps:
            await consumer.position(tp)

        async def read() -> None:
            while len(received) < len(students):
                batch = await consumer.getmany(timeout_ms=1000)
                now = time.time()
                for records in batch.values():
                    for record in records:
                        received.setdefault(int(json.loads(record.value or b"{}")["message_id"]), now)

        reader = asyncio.create_task(read())
        publisher = Publisher(settings, students, rate)
        await publisher.ready()
        sent_at = await publisher.run()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(reader, 60)
    finally:
        await consumer.stop()
    return [(received[m] - t) * 1000 for m, t in sent_at.items() if m in received]


def summarize(
    args: argparse.Namespace,
    clients: list[Client],
    sent_at: dict[int, float],
    rss_before: float,
    rss_connected: float,
    rss_after: float,
    connect_s: float,
    publish_s: float,
    nofile: int,
    metrics_text: str,
) -> dict[str, object]:
    from_stored: list[float] = []
    from_publish: list[float] = []
    wrong = duplicates = missing = 0
    for client in clients:
        if not client.got:
            missing += 1
        duplicates += max(0, len(client.got) - 1)
        for received, data in client.got:
            if not str(data.get("text", "")).startswith("Nudge"):
                wrong += 1
            from_stored.append((received - float(data["created_ts"])) * 1000)  # type: ignore[arg-type]
            from_publish.append((received - sent_at[int(data["message_id"])]) * 1000)  # type: ignore[call-overload]
    delivered = sum(1 for c in clients if c.got)
    result: dict[str, object] = {
        "clients": args.clients,
        "mode": "burst" if args.burst else f"paced {args.rate:g}/s",
        "delivered": delivered,
        "missing": missing,
        "duplicates": duplicates,
        "wrong": wrong,
        "connect_s": round(connect_s, 2),
        "publish_s": round(publish_s, 2),
        "rss_before_mib": round(rss_before, 1),
        "rss_connected_mib": round(rss_connected, 1),
        "rss_after_mib": round(rss_after, 1),
        "nofile": nofile,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    for name, values in (("stored_to_client_ms", from_stored), ("publish_to_client_ms", from_publish)):
        if values:
            result[name] = {
                "p50": round(pct(values, 50), 1),
                "p90": round(pct(values, 90), 1),
                "p99": round(pct(values, 99), 1),
                "max": round(max(values), 1),
                "mean": round(statistics.fmean(values), 1),
            }
    dropped = [line for line in metrics_text.splitlines() if line.startswith("vexnudge_gateway_dropped_clients_total{")]
    result["gateway_dropped"] = dropped
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=500)
    parser.add_argument("--rate", type=float, default=200.0, help="nudges per second (paced mode)")
    parser.add_argument("--burst", action="store_true", help="publish every nudge at once")
    parser.add_argument("--port", type=int, default=0, help="gateway port (0: a free one)")
    parser.add_argument("--wait", type=float, default=60.0, help="seconds to wait for delivery")
    parser.add_argument("--json", action="store_true", help="print the result as JSON only")
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip the Kafka-only baseline (same nudges, a plain consumer, no gateway)",
    )
    args = parser.parse_args()
    try:
        result = asyncio.run(run(args))
    except (OSError, RuntimeError) as exc:
        print(f"bench/sse.py: {exc}\nIs the local stack up? (`vexnudge stack up`)", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>22}: {value}")
    ok = result["delivered"] == args.clients and not result["duplicates"] and not result["wrong"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
