"""Shared helpers of the broker benchmarks (``bench/ingest.py``, ``bench/pipeline.py``).

* :func:`classroom_lines` multiplies the sample classroom: copy ``k`` of every
  student is a new student (``<studentID>-c<k>``), every envelope gets a new
  integer id, and the copies are interleaved line by line, so each student's
  events keep their order, event time stays (almost) monotone over the whole
  stream, and no id is ever seen twice by ingest's dedupe.
* :class:`BenchWorker` is a worker subprocess (the real ``vexnudge worker``)
  that can also run with only some agents registered, under cProfile, or with
  experiment options (``faust.App`` keywords, the consumer's fetch wait).
* :class:`Watch` polls end offsets and a group's committed offsets with
  long-lived clients (cheap enough to poll every 20 ms).
* :func:`raw_ceiling` is the plain-aiokafka consume + decode of a raw topic.

Run as a script (``python bench/common.py worker --agents ingest -- <worker
args>``) it is the worker launcher :class:`BenchWorker` uses.
"""

from __future__ import annotations

import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_HERE = Path(__file__).resolve().parent
# Sibling benchmarks are named like packages (bench/tree_edit.py, bench/feedback.py):
# keep this folder off the import path, the project root on it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import orjson

from vexnudge.childproc import ChildProcess
from vexnudge.workerproc import worker_args

SAMPLE = ROOT / "tests" / "data" / "fixtures" / "sample_classroom.ndjson"
#: New envelope ids start here (the sample's ids are 42,100,000-42,101,006).
ID_BASE = 700_000_000
#: Agents the launcher can register by name (``ingest`` = the stream agent without
#: its analysis); none chosen = exactly the worker's own registration.
AGENT_MODULES = ("stream", "ingest", "feedback", "clock", "web", "watchdog")


# ---------------------------------------------------------------------------------------
# input
# ---------------------------------------------------------------------------------------
@dataclass
class Line:
    """One multiplied telemetry line, kept decoded so it can be re-timed."""

    key: bytes
    event_id: str
    event_type: str
    envelope: dict[str, Any]
    payload: dict[str, Any]

    def encode(self) -> bytes:
        env = dict(self.envelope)
        env["raw_message"] = orjson.dumps(self.payload).decode()
        return orjson.dumps(env)

    def retimed(self, now: float, received: float | None = None) -> bytes:
        """The line with its event time set to ``now`` and its receive time to
        ``received`` (default ``now``: sent as it happens)."""
        moment = datetime.fromtimestamp(now, UTC)
        self.payload["timestamp"] = moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self.envelope["received_at"] = datetime.fromtimestamp(
            received if received is not None else now, UTC
        ).isoformat()
        return self.encode()


def sample_lines() -> list[bytes]:
    from streams.local import read_lines

    return read_lines(SAMPLE.read_bytes())


def classroom(copies: int, tag: str = "c", id_base: int = ID_BASE) -> list[Line]:
    """The sample classroom ``copies`` times over (see the module doc); students
    are ``<studentID>-<tag><k>``, envelope ids count up from ``id_base``."""
    out: list[Line] = []
    for i, raw in enumerate(sample_lines()):
        envelope = orjson.loads(raw)
        payload = orjson.loads(envelope["raw_message"])
        for k in range(copies):
            student = f"{payload['studentID']}-{tag}{k:03d}"
            env = dict(envelope, id=id_base + i * copies + k, studentID=student)
            pay = dict(payload, studentID=student)
            out.append(Line(student.lower().encode(), str(env["id"]), pay["eventType"], env, pay))
    return out


def classroom_lines(copies: int) -> list[bytes]:
    """:func:`classroom` as the bytes a producer sends."""
    return [line.encode() for line in classroom(copies)]


# ---------------------------------------------------------------------------------------
# settings, machine, numbers
# ---------------------------------------------------------------------------------------
def stack_settings() -> Any:
    """Settings from the environment (the local stack's KAFKA_PORT / POSTGRES_PORT)."""
    from topology.settings import load_settings

    return load_settings()


def fresh(settings: Any, tag: str) -> Any:
    import uuid

    from vexnudge.replay import fresh_settings

    return fresh_settings(settings, f"bench-{tag}-{uuid.uuid4().hex[:6]}")


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def machine() -> str:
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {load_average()}"
    )


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return ordered[rank - 1]


def rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in KiB (0, 0 when it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0, 0
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    return (int(fields.get("VmRSS", "0 kB").split()[0]), int(fields.get("VmHWM", "0 kB").split()[0]))


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far."""
    try:
        parts = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid: int) -> dict[int, float]:
    """User + system CPU seconds of each of a process's threads so far (thread id ->
    seconds; the main thread's id is the process id)."""
    out: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            parts = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended meanwhile
        out[int(tid)] = (int(parts[11]) + int(parts[12])) / tick
    return out


async def prometheus_values(port: int, names: Sequence[str]) -> dict[str, float]:
    """The current values of unlabelled series ``names`` on a worker's ``/metrics``."""
    import aiohttp

    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/metrics", timeout=aiohttp.ClientTimeout(total=10)) as reply,
    ):
        reply.raise_for_status()
        text = await reply.text()
    values: dict[str, float] = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in names:
            values[name] = float(value)
    missing = [name for name in names if name not in values]
    if missing:
        raise RuntimeError(f"the worker's /metrics has no {', '.join(missing)}")
    return values


def fmt_rate(value: float) -> str:
    return f"{value:,.0f}"


# ---------------------------------------------------------------------------------------
# the worker
# ---------------------------------------------------------------------------------------
@dataclass
class BenchWorker(ChildProcess):
    """A worker subprocess: the real worker command, optionally with only ``agents``
    registered (``None`` = all, exactly ``vexnudge worker``), optionally profiled
    with cProfile (stats written to ``profile`` when the worker stops)."""

    app_id: str
    topic_prefix: str
    clock: str = "replay"
    agents: Sequence[str] | None = None
    extra_args: list[str] = field(default_factory=list)
    profile: Path | None = None
    fetch_max_wait_ms: int | None = None
    app_options: Sequence[str] = ()
    datadir: Path | None = None
    web_port: int = 0
    """The worker's metrics port (0: no web server)."""

    def __post_init__(self) -> None:
        ChildProcess.__init__(self)

    def start(self) -> BenchWorker:
        self.datadir = self.datadir or Path(tempfile.mkdtemp(prefix=f"vexnudge-{self.app_id}-"))
        args = worker_args(self.app_id, self.topic_prefix, self.clock, self.web_port, self.datadir, self.extra_args)
        command = None  # exactly `vexnudge worker`
        if (
            self.agents is not None
            or self.profile is not None
            or self.fetch_max_wait_ms is not None
            or self.app_options
        ):
            command = [
                sys.executable,
                str(Path(__file__).resolve()),
                "worker",
                *(["--agents", ",".join(self.agents)] if self.agents is not None else []),
                *(["--profile", str(self.profile)] if self.profile else []),
                *(["--fetch-max-wait-ms", str(self.fetch_max_wait_ms)] if self.fetch_max_wait_ms is not None else []),
                *(arg for option in self.app_options for arg in ("--app-option", option)),
                "--",
            ]
        self.spawn(args, self.datadir / "worker.log", command=command, cwd=ROOT)
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def stop(self, timeout: float = 30.0) -> int | None:
        code = super().stop(timeout)
        if code == 0 and self.datadir is not None:
            import shutil

            shutil.rmtree(self.datadir, ignore_errors=True)  # kept (with its log) when the worker failed
        return code

    def describe(self) -> str:
        if self.agents is None:
            return "vexnudge worker (all agents: ingest, analysis, feedback + event store, timers)"
        return f"worker with only these agents registered: {', '.join(self.agents)}"


def _worker_main(argv: list[str]) -> int:
    """``common.py worker --agents a,b [--profile FILE] -- <vexnudge worker args>``."""
    import argparse
    import importlib

    parser = argparse.ArgumentParser(prog="bench/common.py worker")
    parser.add_argument(
        "--agents", help=f"register only these ({', '.join(AGENT_MODULES)}); default: what the worker registers"
    )
    parser.add_argument("--profile")
    parser.add_argument(
        "--fetch-max-wait-ms",
        type=int,
        help="experiment: override the fetch_max_wait_ms Faust hard-codes (1500) for its consumers",
    )
    parser.add_argument(
        "--app-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="experiment: pass or override a faust.App keyword (value parsed as JSON when it can be, else a string)",
    )
    args, rest = parser.parse_known_args(argv)
    rest = [a for a in rest if a != "--"]
    import streams.agents

    def register_some(pipeline: Any) -> None:
        for name in (a for a in args.agents.split(",") if a):
            if name == "ingest":
                importlib.import_module("streams.agents.stream").register(pipeline, analysis=False)
            else:
                importlib.import_module(f"streams.agents.{name}").register(pipeline)

    if args.agents is not None:
        streams.agents.register_all = register_some  # build_pipeline imports it at call time
    if args.fetch_max_wait_ms is not None:
        import aiokafka

        real_init = aiokafka.AIOKafkaConsumer.__init__
        wait_ms = args.fetch_max_wait_ms

        def patched_init(self: Any, *a: Any, **kw: Any) -> None:
            kw["fetch_max_wait_ms"] = wait_ms
            real_init(self, *a, **kw)

        aiokafka.AIOKafkaConsumer.__init__ = patched_init  # type: ignore[method-assign]
    if args.app_option:
        import faust

        options: dict[str, Any] = {}
        for item in args.app_option:
            key, _, text = item.partition("=")
            try:
                options[key] = orjson.loads(text)
            except orjson.JSONDecodeError:
                options[key] = text
        real_app = faust.App

        def app_with_options(*a: Any, **kw: Any) -> Any:
            return real_app(*a, **{**kw, **options})

        faust.App = app_with_options  # topology.app calls faust.App(...) at build time
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        real_exit = os._exit

        def dump_and_exit(code: int) -> None:
            profiler.disable()
            profiler.dump_stats(args.profile)
            real_exit(code)

        os._exit = dump_and_exit  # type: ignore[assignment]  # the worker leaves through os._exit
        profiler.enable()
    from vexnudge.cli import main

    return main(rest)


# ---------------------------------------------------------------------------------------
# the broker
# ---------------------------------------------------------------------------------------
class Watch:
    """End offsets and committed offsets, polled with long-lived clients."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self.consumer: Any = None
        self.admin: Any = None

    async def __aenter__(self) -> Watch:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.admin import AIOKafkaAdminClient

        self.consumer = AIOKafkaConsumer(bootstrap_servers=self.settings.kafka_bootstrap_servers)
        await self.consumer.start()
        self.admin = AIOKafkaAdminClient(bootstrap_servers=self.settings.kafka_bootstrap_servers)
        await self.admin.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.consumer.stop()
        await self.admin.close()

    def tps(self, logical: str) -> list[Any]:
        from aiokafka import TopicPartition

        topic = self.settings.topic(logical)
        return [TopicPartition(topic, p) for p in range(self.settings.topic_partitions)]

    async def end(self, logical: str) -> int:
        """Records in the topic (sum of end offsets)."""
        return sum((await self.consumer.end_offsets(self.tps(logical))).values())

    async def committed(self, logical: str) -> int:
        """Records of the topic the app's group has committed."""
        from aiokafka.errors import KafkaError

        topic = self.settings.topic(logical)
        try:
            offsets = await self.admin.list_consumer_group_offsets(self.settings.app_id)
        except KafkaError:  # no coordinator yet (a new group on a fresh broker)
            return 0
        return sum(meta.offset for tp, meta in offsets.items() if tp.topic == topic and meta.offset > 0)

    async def analysed(self) -> int:
        """Raw lines the worker is done with: committed on the raw topic, less the
        re-keyed events it has not committed yet (``topics.ANALYSIS_INPUTS``)."""
        from topology import topics as T

        behind = await self.end(T.REKEYED.name) - await self.committed(T.REKEYED.name)
        return await self.committed(T.RAW.name) - max(behind, 0)

    async def until(
        self,
        probe: Callable[[], Any],
        target: int,
        *,
        worker: BenchWorker | None = None,
        timeout_s: float = 600.0,
        interval_s: float = 0.02,
        on_poll: Callable[[], None] | None = None,
    ) -> float:
        """Poll ``probe`` until it reaches ``target``; the wall time (``time.time``) it did."""
        deadline = time.monotonic() + timeout_s
        last = -1
        while True:
            value = await probe()
            now = time.time()
            if on_poll:
                on_poll()
            if value >= target:
                return now
            if worker is not None and not worker.alive:
                raise RuntimeError(
                    f"the worker exited ({worker.process and worker.process.returncode}):\n{worker.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise TimeoutError(f"stuck at {value}/{target} (was {last})")
            last = value
            await asyncio.sleep(interval_s)


async def record_times(settings: Any, logical: str) -> tuple[int, float, float]:
    """(records, first, last) record timestamp (seconds) of a topic (CreateTime)."""
    from topology.kafka_admin import read_to_end

    count, first, last = 0, float("inf"), 0.0
    async for record in read_to_end(settings, [settings.topic(logical)]):
        count += 1
        first = min(first, record.timestamp / 1000)
        last = max(last, record.timestamp / 1000)
    return count, first, last


async def produce_fast(settings: Any, lines: Sequence[bytes]) -> tuple[float, float]:
    """``produce_lines`` as fast as possible; (wall time it started, seconds it took)."""
    from vexnudge.producer import produce_lines

    started = time.time()
    stats = await produce_lines(settings, lines)
    return started, stats.seconds


@dataclass
class Ceiling:
    records: int
    seconds: float
    bytes: int
    cpu_s: float = 0.0
    """CPU time of this process over the same span (the consumer's threads included)."""

    @property
    def rate(self) -> float:
        return self.records / self.seconds


async def raw_ceiling(
    settings: Any, logical: str, expected: int, *, payload: bool = True, handle: Callable[[bytes], object] | None = None
) -> Ceiling:
    """Plain aiokafka: consume ``expected`` records of the topic from the beginning
    (no group, ``getmany``) and decode each value with orjson (and its
    ``raw_message`` JSON string when ``payload``), or pass each value to
    ``handle`` instead.  Timed from the first fetch."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap_servers, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        tps = [TopicPartition(settings.topic(logical), p) for p in range(settings.topic_partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        loads = orjson.loads
        count = size = 0
        started, cpu0 = time.perf_counter(), time.process_time()
        while count < expected:
            batch = await consumer.getmany(timeout_ms=1000)
            for records in batch.values():
                for record in records:
                    size += len(record.value)
                    if handle is not None:
                        handle(record.value)
                        continue
                    envelope = loads(record.value)
                    if payload and isinstance(envelope, dict) and isinstance(envelope.get("raw_message"), str):
                        loads(envelope["raw_message"])
                count += len(records)
        return Ceiling(count, time.perf_counter() - started, size, time.process_time() - cpu0)
    finally:
        await consumer.stop()


@dataclass
class Changelog:
    """One table's changelog: the latest value size per key, and everything written."""

    latest: dict[bytes, int]
    records: int
    bytes: int


async def changelogs(settings: Any, tables: Iterable[str]) -> dict[str, Changelog]:
    """Read each table's changelog to its end (tombstones remove their key)."""
    from topology.kafka_admin import read_to_end

    out: dict[str, Changelog] = {}
    for name in tables:
        topic = f"{settings.app_id}-{name}-changelog"
        log = Changelog({}, 0, 0)
        async for record in read_to_end(settings, [topic]):
            log.records += 1
            log.bytes += len(record.value or b"") + len(record.key or b"")
            if record.key is None:
                continue
            if record.value is None:
                log.latest.pop(record.key, None)
            else:
                log.latest[record.key] = len(record.value)
        out[name] = log
    return out


# ---------------------------------------------------------------------------------------
# throwaway databases (the event store and the feedback stage write to PostgreSQL)
# ---------------------------------------------------------------------------------------
def fresh_db(base: Any) -> Any:
    """Settings naming a new database ``vexnudge_bench_<hex>`` (:func:`create_db` makes it)."""
    import uuid

    from pydantic import SecretStr

    url = base.database_url.get_secret_value()
    name = f"vexnudge_bench_{uuid.uuid4().hex[:10]}"
    return base.model_copy(update={"database_url": SecretStr(f"{url.rpartition('/')[0]}/{name}")})


async def _admin(base: Any, sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(base.database_url.get_secret_value(), timeout=10)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def create_db(base: Any, settings: Any) -> None:
    from delivery.migrate import migrate_url

    url = settings.database_url.get_secret_value()
    await _admin(base, f'create database "{url.rpartition("/")[2]}"')
    await migrate_url(url)


async def drop_db(base: Any, settings: Any) -> None:
    name = settings.database_url.get_secret_value().rpartition("/")[2]
    await _admin(base, f'drop database if exists "{name}" with (force)')


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A Markdown table."""
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|",
    ]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        sys.exit(_worker_main(sys.argv[2:]))
    print(__doc__)
