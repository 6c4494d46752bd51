"""The whole product on the local stack, replaying the sample classroom.

A fresh app (topics, consumer group) and a fresh demo database; a worker in
event-time mode with the proactive lane on; the SSE gateway; the sample
classroom produced at N times its recorded pace, with a live count of what
the pipeline did; pages whose URLs (with tokens) are printed so nudges can be
watched as they arrive.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import time
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import quote

import asyncpg
import orjson
from aiokafka import AIOKafkaConsumer

from delivery.gateway import tokens
from delivery.migrate import migrate_url
from feedback.nudge import NudgeConfig
from streams.config import EngineConfig
from streams.local import analyze_lines, read_lines
from streams.scoring import TreeEditScorer
from topology import topics as T
from topology.kafka_admin import ensure_topics, wait_consumed
from topology.settings import PROJECT_ROOT, Settings
from vexnudge.childproc import ChildProcess, free_port, stop_all, stop_like_ctrl_c
from vexnudge.gatewayproc import GatewayProcess
from vexnudge.producer import produce_lines
from vexnudge.replay import delete_topics, horizon_of, send_final_ticks
from vexnudge.workerproc import WorkerProcess

SAMPLE = PROJECT_ROOT / "tests" / "data" / "fixtures" / "sample_classroom.ndjson"
DEMO_DATABASE = "vexnudge_demo"


@dataclass
class Tally:
    """What the pipeline published so far (read from its topics)."""

    counts: Counter[str] = field(default_factory=Counter)

    def line(self, total: int) -> str:
        c = self.counts
        return (
            f"events {c['events']}/{total} · dead letters {c['dead']} · triggers {c['triggers']} · "
            f"nudges sent {c['acted']}, suppressed {c['suppressed']}, pending {c['pending']}"
        )


def ollama_answers(host: str) -> bool:
    """True when an Ollama server answers at ``host``."""
    try:
        with urllib.request.urlopen(f"{host.rstrip('/')}/api/version", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


async def fresh_database(settings: Settings) -> Settings:
    """Drop and recreate the demo database, apply the migrations; settings that use it."""
    url = settings.database_url.get_secret_value()
    base = url.rsplit("/", 1)[0]
    conn = await asyncpg.connect(url, timeout=10)
    try:
        await conn.execute(f'drop database if exists "{DEMO_DATABASE}" with (force)')
        await conn.execute(f'create database "{DEMO_DATABASE}"')
    finally:
        await conn.close()
    demo_url = f"{base}/{DEMO_DATABASE}"
    await migrate_url(demo_url)
    return settings.model_copy(update={"database_url": type(settings.database_url)(demo_url)})


def first_nudged(settings: Settings, lines: list[bytes], count: int) -> list[tuple[str, float]]:
    """Students whose first nudge comes earliest, with its replay time (seconds in)."""
    run = analyze_lines(
        lines,
        EngineConfig.from_settings(settings),
        TreeEditScorer(),
        NudgeConfig.from_settings(settings),
        partitions=settings.topic_partitions,
    )
    start = min(e.ts for e in run.observed.events)
    first: dict[str, float] = {}
    for r in run.observed.requests:
        if r.decision == "act" and r.trigger is not None:
            first.setdefault(r.trigger.student_id, r.trigger.ts - start)
    return sorted(first.items(), key=lambda kv: kv[1])[:count]


async def tally_topics(settings: Settings, tally: Tally, stop: asyncio.Event) -> None:
    """Count records on the pipeline's output topics until ``stop``."""
    names = {settings.topic(s.name): s.name for s in (T.EVENTS, T.DEADLETTER, T.TRIGGERS, T.NUDGE_OUTCOMES)}
    consumer = AIOKafkaConsumer(
        *names, bootstrap_servers=settings.kafka_bootstrap_servers, auto_offset_reset="earliest"
    )
    await consumer.start()
    outcomes: dict[str, str] = {}
    try:
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=500)
            for tp, records in batch.items():
                kind = names[tp.topic]
                for record in records:
                    if kind == T.NUDGE_OUTCOMES.name:
                        body = orjson.loads(record.value or b"{}")
                        outcomes[body.get("trigger_id", "")] = body.get("status", "")
                    else:
                        tally.counts[
                            {"vex.events": "events", "vex.deadletter": "dead", "vex.triggers": "triggers"}[kind]
                        ] += 1
            statuses = Counter(outcomes.values())
            for status in ("acted", "suppressed", "pending"):
                tally.counts[status] = statuses[status]
    finally:
        await consumer.stop()


@dataclass
class Demo:
    settings: Settings
    speed: float | None
    students: int
    port: int
    keep_running: bool
    out: object = sys.stdout

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)  # type: ignore[call-overload]

    async def run(self) -> int:
        lines = read_lines(SAMPLE.read_bytes())
        name = f"demo-{uuid.uuid4().hex[:6]}"
        s = self.settings.model_copy(
            update={"app_id": name, "topic_prefix": f"{name}.", "trigger_daemon_enabled": True, "clock_mode": "replay"}
        )
        self.say("demo: preparing a fresh demo database and topics")
        s = await fresh_database(s)
        await ensure_topics(s)
        if not ollama_answers(s.ollama_host):
            self.say(
                f"demo: no Ollama server answers at {s.ollama_host}; nudges come from the "
                "deterministic template responder (stored with model 'template'). "
                "Start Ollama and set OLLAMA_HOST/OLLAMA_MODEL for model-written nudges."
            )
        token_secret, admin = secrets.token_hex(32), secrets.token_urlsafe(32)
        env = {"DATABASE_URL": s.database_url.get_secret_value(), "TRIGGER_DAEMON_ENABLED": "true"}
        worker = WorkerProcess(
            s.app_id,
            s.topic_prefix,
            clock="replay",
            env=env,
            web_port=free_port(),
            log_path=s.stack_dir / "logs" / f"{name}-worker.log",
            grace_s=s.shutdown_grace_s,
        )
        gateway = GatewayProcess(
            s, token_secret, admin, port=self.port, log_path=s.stack_dir / "logs" / f"{name}-gateway.log"
        )
        children: list[ChildProcess] = [worker, gateway]
        try:
            await self._start(worker, gateway)
            self._print_urls(s, gateway.base_url, token_secret, admin, lines)
            await self._replay(s, lines, children)
            if self.keep_running:
                self.say("demo: the pipeline and the pages stay up; press Ctrl-C to stop.")
                while True:
                    await asyncio.sleep(1)
                    check_alive(children)
        finally:
            self.say(f"demo: stopping the worker and the gateway (SHUTDOWN_GRACE_S={s.shutdown_grace_s:g})")
            stop_all(children)
            await delete_topics(s)
        return 0

    @staticmethod
    async def _start(worker: WorkerProcess, gateway: GatewayProcess) -> None:
        """Start both, then wait until each answers its own health check: a
        child that fails to start (the gateway's port taken) fails the demo
        with its own error, before any URL is printed."""
        worker.start()
        gateway.start()
        await worker.listening(worker.web_port, timeout_s=120)
        await gateway.listening(gateway.port, timeout_s=120)

    def _print_urls(self, s: Settings, base: str, secret: str, admin: str, lines: list[bytes]) -> None:
        self.say(f"demo: teacher board  {base}/board#admin_token={quote(admin, safe='')}")
        for student, at in first_nudged(s, lines, self.students):
            token = tokens.issue(secret.encode(), student, ttl_s=12 * 3600, now=time.time())
            self.say(
                f"demo: student {student:<10} {base}/student#token={quote(token, safe='')}"
                f"   (first nudge {at / 60:.0f} min into the class)"
            )
        self.say(f"demo: logs in {s.stack_dir / 'logs'}")
        self.say(
            f"demo: tap a topic (while the demo runs): TOPIC_PREFIX={s.topic_prefix} "
            "vexnudge tail vex.triggers --from-beginning"
        )

    async def _replay(self, s: Settings, lines: list[bytes], children: list[ChildProcess]) -> None:
        tally, stop = Tally(), asyncio.Event()
        counter = asyncio.ensure_future(tally_topics(s, tally, stop))
        pace = f"{self.speed:g}x the recorded pace" if self.speed else "as fast as possible"
        self.say(f"demo: replaying {SAMPLE.name} ({len(lines)} events, 55 minutes of class) at {pace}")
        producing = asyncio.ensure_future(produce_lines(s, lines, speed=self.speed))
        while not producing.done():
            check_alive(children)
            self.say(f"demo: {tally.line(len(lines))}")
            await asyncio.wait([producing], timeout=3)
        await producing
        for spec in T.ANALYSIS_INPUTS:
            await wait_consumed(s, s.app_id, s.topic(spec.name), 300)
        horizon = horizon_of(lines)
        if horizon is not None:
            await send_final_ticks(s, horizon)
        for topic in (T.CLOCK.name, T.FEEDBACK_REQUESTS.name):
            await wait_consumed(s, s.app_id, s.topic(topic), 300)
        await asyncio.sleep(3)
        stop.set()
        await counter
        self.say(f"demo: done — {tally.line(len(lines))}")


def check_alive(children: list[ChildProcess]) -> None:
    """:raises ChildFailed: one of the children has stopped (with its last words)."""
    for child in children:
        if not child.alive:
            raise child.failed("stopped")


def run_demo(settings: Settings, *, speed: float | None, students: int, port: int, keep_running: bool) -> int:
    """Entry point of ``vexnudge demo``: SIGTERM and SIGHUP stop it as Ctrl-C does
    (children stopped, topics deleted).

    :raises KeyboardInterrupt: stopped by Ctrl-C, SIGTERM or SIGHUP.
    :raises ChildFailed: the worker or the gateway did not start, or stopped.
    """
    stop_like_ctrl_c()
    return asyncio.run(Demo(settings, speed, students, port, keep_running).run())
