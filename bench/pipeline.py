"""Benchmark: ingest + analysis on one worker process (throughput, latency, state size).

Run ``.venv/bin/python bench/pipeline.py`` with the local stack up
(``vexnudge stack up``; the same STACK_DIR / KAFKA_PORT / POSTGRES_PORT).
Options: ``--part throughput,latency`` (default both), ``--copies N`` (classroom
copies for throughput, default 20 = 20,140 events), ``--latency-copies N``
(default 10 = 10,070 events, 50 s at 200/s), ``--rate`` (default 200),
``--repeats N`` (default 3), ``--variants`` / ``--latency-variants`` (default
``all``, the worker as shipped with every role; ``stream`` runs it with
``--roles stream``, as a district's stream workers; experiments as in ``bench/ingest.py``:
``all+key=value`` passes a ``faust.App`` keyword, ``all+fw100`` gives Faust's
consumer ``fetch_max_wait_ms=100`` instead of its hard-coded 1500; for latency,
``+d:SECONDS`` sends the lines out of order, each up to that much after it happened), ``--quick``.

Every run has fresh topics, a fresh consumer group and a throwaway PostgreSQL
database; the worker is the real ``vexnudge worker`` subprocess with every
agent (ingest, analysis, feedback, event store, timers).

**Throughput.** Replay clock, commit interval 0.2 s.  After one warm-up line,
the multiplied sample classroom (every copy of a student is a new student with
fresh envelope ids; lines interleaved, so each student's order holds and event
time stays monotone) is produced as fast as possible with ``produce_lines``;
timed from the first send to the worker's committed offset of the raw topic
(and of ``vex.events.rekeyed``, empty here) covering every event: the stream
agent is done with them (the event store commits in a group of its own).
Next to it, in the same run and with the worker stopped, plain aiokafka
consumes the raw topic from the beginning and decodes each line and its
``raw_message`` with orjson (the ceiling); then the same consumer feeds each
line to the pure cores (decode, duplicate check, engine; no output, no state
written): the cores floor, the most any worker running these cores in Python
could reach.  The CPU ratio divides the ceiling's CPU time per event (this
process, the consumer's thread included) by the worker's: the ratio both would
show running a core flat out, less swayed than the rates by what else the
two cores of a laptop are doing.  The worker's CPU is split three ways:
the stream agent's own batches (its ``vexnudge_stream_agent_cpu_seconds_total``,
read from the worker's ``/metrics``), the rest of its main thread (Faust's
stream and hand-over, the producer's sender, commits) and its other threads
(Faust's consumer thread: fetching and unpacking); from the ceiling's CPU the
bench prints the per-event budget the ratio goal leaves and how much of it
the worker spent outside the agent.  Then the latest value of every key
of the ``students``, ``programs`` and ``ingest-seen`` changelogs gives the table
bytes per student.

**Latency.** Live clock, default worker settings.  Warm-up: one copy of the
classroom under other students at 500 lines/s (every output topic written once).
Then the classroom lines are sent at a steady ``--rate`` lines/s with the
producer ``produce_lines`` uses (same key, same ``vex-line`` header), each
re-timed to the moment it is sent (payload ``timestamp`` and ``received_at``;
runs then fire wheel-spin, explorer, resilience and iterative triggers), while
a consumer in this process reads
``vex.runs`` and ``vex.triggers``.  A run's latency is from the send of its
``runProject`` line (this process's clock) to this process reading its
``RunScored`` / ``TriggerFired`` (matched by the run's event id); the same to
the output record's own timestamp (the worker's send) is printed as well.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson

from bench.common import (
    BenchWorker,
    Line,
    Watch,
    changelogs,
    classroom,
    classroom_lines,
    cpu_seconds,
    create_db,
    drop_db,
    fmt_rate,
    fresh,
    fresh_db,
    load_average,
    machine,
    median,
    percentile,
    produce_fast,
    prometheus_values,
    raw_ceiling,
    rss_kib,
    stack_settings,
    table,
    thread_cpu_seconds,
)
from bench.ingest import parse_variant, warm_up
from topology import topics as T
from vexnudge.gatewayproc import free_port

STATE_TABLES = ("students", "programs", "ingest-seen")
OUTPUTS = (T.EVENTS, T.RUNS, T.TRIGGERS, T.EPISODES, T.DEADLETTER, T.FEEDBACK_REQUESTS)
GOAL_RATE, GOAL_RATIO, GOAL_P99_MS = 2000.0, 0.25, 100.0
WARM_ID_BASE = 600_000_000


# ---------------------------------------------------------------------------------------
# throughput (and table bytes)
# ---------------------------------------------------------------------------------------
def worker_variant(variant: str) -> tuple[int | None, list[str], list[str]]:
    """``all`` (the worker as shipped, every role) or ``stream`` (``--roles stream``:
    ingest, analysis and clock only, as a district's stream workers run), then the
    ``+fwN`` / ``+key=value`` experiments of ``bench/ingest.py``, ``+s:FIELD=VALUE``
    (a setting, ``vexnudge worker --set``; e.g. ``+s:worker_batch_within_ms=2``) or
    ``+l:LEVEL`` (``vexnudge worker --loglevel LEVEL``)."""
    name, *mods = variant.split("+")
    if name not in ("all", "stream"):
        raise SystemExit(
            f"unknown pipeline variant {variant!r}: all or stream, then +fwN, +key=value, +s:FIELD=VALUE or +l:LEVEL"
        )
    args = ["--roles", "stream"] if name == "stream" else []
    for mod in mods:
        if mod.startswith("s:"):
            args += ["--set", mod[2:]]
        elif mod.startswith("l:"):
            args += ["--loglevel", mod[2:]]
    experiments = (m for m in mods if not m.startswith(("s:", "l:")))
    agents, fetch_wait, options = parse_variant("+".join(["all", *experiments]))
    assert agents is None
    return fetch_wait, options, args


async def throughput_once(settings: Any, lines: list[bytes], variant: str) -> dict[str, Any]:
    from topology.kafka_admin import ensure_topics
    from vexnudge.replay import delete_topics

    await ensure_topics(settings)
    fetch_wait, options, roles = worker_variant(variant)
    worker = BenchWorker(
        settings.app_id,
        settings.topic_prefix,
        clock="replay",
        fetch_max_wait_ms=fetch_wait,
        app_options=options,
        web_port=free_port(),
        extra_args=[
            "--commit-interval",
            "0.2",
            *roles,
            "--set",
            f"database_url={settings.database_url.get_secret_value()}",
        ],
    ).start()
    n = len(lines)
    out: dict[str, Any] = {"n": n, "load": float(load_average().split()[0])}
    try:
        async with Watch(settings) as watch:
            await warm_up(settings, watch, worker, analysis=True)
            out["rss_idle_mib"] = rss_kib(worker.pid)[0] / 1024
            cpu0, threads0 = cpu_seconds(worker.pid), thread_cpu_seconds(worker.pid)
            agent0 = await prometheus_values(worker.web_port, AGENT_SERIES)
            produce = asyncio.ensure_future(produce_fast(settings, lines))
            t_ingest = await watch.until(lambda: watch.end(T.EVENTS.name), n + 1, worker=worker)
            t_done = await watch.until(watch.analysed, n + 1, worker=worker)
            started, produce_s = await produce
            out["cpu_s"] = cpu_seconds(worker.pid) - cpu0
            out.update(cpu_split(worker.pid, threads0, agent0, await prometheus_values(worker.web_port, AGENT_SERIES)))
            out["rss_end_mib"], out["rss_peak_mib"] = (v / 1024 for v in rss_kib(worker.pid))
            out["produce_s"], out["ingest_s"], out["done_s"] = produce_s, t_ingest - started, t_done - started
            out["records"] = {spec.name: await watch.end(spec.name) for spec in OUTPUTS}
            out["runs"], out["triggers"] = out["records"][T.RUNS.name], out["records"][T.TRIGGERS.name]
    finally:
        worker.stop()
    out["changelogs"] = await changelogs(settings, (*STATE_TABLES, "watermarks"))
    out["sizes"] = {name: out["changelogs"][name].latest for name in STATE_TABLES}
    ceiling = await raw_ceiling(settings, T.RAW.name, n + 1)
    out["ceiling"] = ceiling.rate
    out["ceiling_cpu_s"] = ceiling.cpu_s
    out["floor"] = (await raw_ceiling(settings, T.RAW.name, n + 1, handle=cores(settings))).rate
    await delete_topics(settings)
    return out


AGENT_SERIES = ("vexnudge_stream_agent_cpu_seconds_total", "vexnudge_stream_agent_records_total")


def cpu_split(
    pid: int, threads0: dict[int, float], agent0: dict[str, float], agent1: dict[str, float]
) -> dict[str, float]:
    """Where the worker's CPU went over the run: the stream agent's own batches
    (its counter), the rest of the main thread (Faust's stream and hand-over, the
    producer's sender, commits, timers) and the other threads (Faust's consumer
    thread, which fetches and unpacks the records)."""
    threads1 = thread_cpu_seconds(pid)
    spent = {tid: cpu - threads0.get(tid, 0.0) for tid, cpu in threads1.items()}
    agent = agent1[AGENT_SERIES[0]] - agent0[AGENT_SERIES[0]]
    main = spent.get(pid, 0.0)
    return {
        "agent_cpu_s": agent,
        "agent_records": agent1[AGENT_SERIES[1]] - agent0[AGENT_SERIES[1]],
        "main_rest_cpu_s": main - agent,
        "threads_cpu_s": sum(spent.values()) - main,
    }


def cores(settings: Any) -> Callable[[bytes], object]:
    """One raw line through the pure cores, as ``streams.local.analyze_lines``
    treats it: decode, duplicate check, engine.  Fed by the plain consumer, this
    is the fastest a Python worker running these cores could go, before writing
    any output or state (the "cores floor")."""
    from feedback.nudge import NudgeConfig
    from streams.config import EngineConfig
    from streams.local import LineAnalyzer, LocalAnalyzer
    from streams.scoring import TreeEditScorer

    analyzer = LocalAnalyzer(
        EngineConfig.from_settings(settings),
        TreeEditScorer.from_settings(settings),
        NudgeConfig.from_settings(settings),
        partitions=None,
    )
    return LineAnalyzer(analyzer).feed


def per_student(sizes: dict[str, dict[bytes, int]]) -> dict[str, dict[str, int]]:
    """Bytes per student per table (``programs`` keys are ``student\\x1fsession``)."""
    out: dict[str, dict[str, int]] = {}
    for name, keys in sizes.items():
        totals: dict[str, int] = defaultdict(int)
        for key, size in keys.items():
            student = key.decode(errors="replace").split("\x1f", 1)[0]
            if student != "bench-warmup":
                totals[student] += size
        out[name] = dict(totals)
    return out


def report_state(runs: list[dict[str, Any]]) -> None:
    last = per_student(runs[-1]["sizes"])
    students = sorted(set().union(*(set(v) for v in last.values())))
    rows = []
    grand = [sum(last[t].get(s, 0) for t in STATE_TABLES) for s in students]
    for name in STATE_TABLES:
        values = [last[name].get(s, 0) for s in students]
        rows.append(
            (name, len(last[name]), f"{statistics.mean(values):,.0f}", f"{max(values):,}", f"{sum(values) / 1e6:.2f}")
        )
    rows.append(
        ("all three", len(students), f"{statistics.mean(grand):,.0f}", f"{max(grand):,}", f"{sum(grand) / 1e6:.2f}")
    )
    print(
        f"\nTable state after the last throughput run ({len(students)} students; latest value per key "
        "of each changelog, key bytes excluded):"
    )
    print(table(["table", "students", "mean bytes/student", "max bytes/student", "total MB"], rows))
    keys = runs[-1]["sizes"]["programs"]
    print(
        f"programs: {len(keys)} keys (one per student and session), "
        f"{statistics.mean(keys.values()):,.0f} bytes per key on average"
    )
    n = runs[-1]["n"] + 1
    rows = [(name, f"{count:,}", f"{count / n:.2f}", "") for name, count in runs[-1]["records"].items()]
    rows += [
        (f"{name} changelog", f"{log.records:,}", f"{log.records / n:.2f}", f"{log.bytes / n:,.0f}")
        for name, log in runs[-1]["changelogs"].items()
    ]
    total = sum(runs[-1]["records"].values()) + sum(log.records for log in runs[-1]["changelogs"].values())
    rows.append(("all written", f"{total:,}", f"{total / n:.2f}", ""))
    print(f"\nRecords the worker wrote per input event (last run, {n:,} events):")
    print(table(["topic", "records", "per event", "bytes per event"], rows))


def core_cost(settings: Any, lines: list[bytes]) -> float:
    """CPU seconds per event of the pure cores alone: ``streams.local.analyze_lines``
    (decode, dedupe, engine) in this process: no Kafka, no Faust, no tables, no state
    codec.  Without the replay watermarks: the local emulation scans every student per
    event (the worker keeps a heap), which would make this grow with the class."""
    from feedback.nudge import NudgeConfig
    from streams.config import EngineConfig
    from streams.local import analyze_lines
    from streams.scoring import TreeEditScorer

    started = time.process_time()
    analyze_lines(
        lines,
        EngineConfig.from_settings(settings),
        TreeEditScorer.from_settings(settings),
        NudgeConfig.from_settings(settings),
        partitions=None,
    )
    return (time.process_time() - started) / len(lines)


async def bench_throughput(base: Any, lines: list[bytes], variants: list[str], repeats: int) -> None:
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for repeat in range(repeats):
        for variant in variants:
            settings = fresh(fresh_db(base), "pipe")
            await create_db(base, settings)
            try:
                r = await throughput_once(settings, lines, variant)
            finally:
                await drop_db(base, settings)
            results[variant].append(r)
            n = r["n"]
            print(
                f"repeat {repeat + 1} {variant:>8}: load {r['load']:.2f}  produce {r['produce_s']:.2f} s  "
                f"ingested {fmt_rate(n / r['ingest_s'])}/s  analysed+committed {fmt_rate(n / r['done_s'])}/s "
                f"({r['done_s']:.1f} s)  ceiling {fmt_rate(r['ceiling'])}/s  "
                f"ratio {n / r['done_s'] / r['ceiling']:.1%}  cores floor {fmt_rate(r['floor'])}/s "
                f"({r['floor'] / r['ceiling']:.1%})  worker CPU {r['cpu_s'] / n * 1e6:.0f} us/event "
                f"({r['cpu_s'] / r['done_s']:.0%} of a core)  ceiling CPU {r['ceiling_cpu_s'] / n * 1e6:.0f} us/event "
                f"(CPU ratio {r['ceiling_cpu_s'] / r['cpu_s']:.1%}; agent {r['agent_cpu_s'] / n * 1e6:.0f}, "
                f"main thread rest {r['main_rest_cpu_s'] / n * 1e6:.0f}, other threads "
                f"{r['threads_cpu_s'] / n * 1e6:.0f})  RSS {r['rss_idle_mib']:.0f}->{r['rss_end_mib']:.0f} "
                f"(peak {r['rss_peak_mib']:.0f}) MiB  runs {r['runs']} triggers {r['triggers']}",
                flush=True,
            )
            await asyncio.sleep(1)
    rows = []
    for variant, runs in results.items():
        n = runs[0]["n"]
        done = [n / r["done_s"] for r in runs]
        ratio = [n / r["done_s"] / r["ceiling"] for r in runs]
        rows.append(
            (
                variant,
                f"{int(n):,}",
                fmt_rate(median(done)),
                f"{fmt_rate(min(done))}–{fmt_rate(max(done))}",
                fmt_rate(median([n / r["ingest_s"] for r in runs])),
                fmt_rate(median([r["ceiling"] for r in runs])),
                f"{median(ratio):.1%}",
                fmt_rate(median([r["floor"] for r in runs])),
                f"{median([r['floor'] / r['ceiling'] for r in runs]):.1%}",
                f"{median([r['produce_s'] for r in runs]):.2f}",
                f"{median([r['cpu_s'] / n * 1e6 for r in runs]):.0f}",
                f"{median([r['cpu_s'] / r['done_s'] for r in runs]):.0%}",
                f"{median([r['ceiling_cpu_s'] / n * 1e6 for r in runs]):.0f}",
                f"{median([r['ceiling_cpu_s'] / r['cpu_s'] for r in runs]):.1%}",
                f"{median([r['agent_cpu_s'] / n * 1e6 for r in runs]):.0f}",
                f"{median([r['main_rest_cpu_s'] / n * 1e6 for r in runs]):.0f}",
                f"{median([r['threads_cpu_s'] / n * 1e6 for r in runs]):.0f}",
                f"{median([r['rss_idle_mib'] for r in runs]):.0f} / {median([r['rss_end_mib'] for r in runs]):.0f} / "
                f"{median([r['rss_peak_mib'] for r in runs]):.0f}",
                f"{median([r['load'] for r in runs]):.2f}",
            )
        )
    print()
    print(
        table(
            [
                "worker",
                "events",
                "events/s to analysis committed (median)",
                "range",
                "to vex.events /s",
                "raw ceiling /s",
                "ratio",
                "cores floor /s",
                "floor / ceiling",
                "produce s",
                "worker CPU µs/event",
                "worker CPU busy",
                "ceiling CPU µs/event",
                "CPU ratio",
                "of which: agent µs/event",
                "main thread rest µs/event",
                "other threads µs/event",
                "RSS MiB idle / end / peak",
                "load",
            ],
            rows,
        )
    )
    print(f"goals: >= {GOAL_RATE:,.0f} events/s per worker process, >= {GOAL_RATIO:.0%} of the raw ceiling")
    cores_us = core_cost(base, lines) * 1e6
    print(
        f"the pure cores alone (streams.local.analyze_lines on the same lines, in process): "
        f"{cores_us:.0f} µs CPU per event"
    )
    for variant, runs in results.items():
        n = runs[0]["n"]
        budget = median([r["ceiling_cpu_s"] / n * 1e6 / GOAL_RATIO for r in runs])
        outside = median([(r["main_rest_cpu_s"] + r["threads_cpu_s"]) / n * 1e6 for r in runs])
        print(
            f"budget ({variant}): {GOAL_RATIO:.0%} of the ceiling's CPU rate allows {budget:.0f} µs of worker CPU "
            f"per event; outside the agent the worker spent {outside:.0f}, which leaves {budget - outside:.0f} "
            f"for the agent (it spent {median([r['agent_cpu_s'] / n * 1e6 for r in runs]):.0f}; "
            f"its pure cores alone {cores_us:.0f})"
        )
    report_state(next(iter(results.values())))


# ---------------------------------------------------------------------------------------
# latency
# ---------------------------------------------------------------------------------------
class OutputReader:
    """Reads ``vex.runs`` and ``vex.triggers`` as they are written; stamps each on receipt."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self.runs: list[tuple[str, float, float]] = []  # (event id, received, record timestamp)
        self.triggers: list[tuple[str | None, str, float, float]] = []  # (+ type)
        self.task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()

    async def start(self) -> None:
        self.task = asyncio.ensure_future(self._run())
        await self.ready.wait()

    async def _run(self) -> None:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.settings.kafka_bootstrap_servers,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        runs, triggers = self.settings.topic(T.RUNS.name), self.settings.topic(T.TRIGGERS.name)
        try:
            tps = [TopicPartition(t, p) for t in (runs, triggers) for p in range(self.settings.topic_partitions)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            self.ready.set()
            async for record in consumer:
                now = time.time()
                value = orjson.loads(record.value)
                if record.topic == runs:
                    self.runs.append((value["event_id"], now, record.timestamp / 1000))
                else:
                    self.triggers.append((value.get("event_id"), value["type"], now, record.timestamp / 1000))
        finally:
            await consumer.stop()

    async def stop(self) -> None:
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


async def paced_send(settings: Any, lines: list[Line], rate: float, disorder_s: float = 0.0) -> dict[str, float]:
    """Send ``lines`` at ``rate`` per second, re-timed as they go; the send time per event id.

    ``disorder_s``: line *i* happens at ``i / rate`` but is sent after a seeded random
    delay of up to that many seconds (classroom Wi-Fi), so lines arrive out of order.
    """
    from vexnudge.producer import LINE_HEADER, make_producer

    topic = settings.topic(T.RAW.name)
    producer = make_producer(settings)
    await producer.start()
    await producer.partitions_for(topic)  # metadata first: the first send must not wait for it
    sent: dict[str, float] = {}
    pending = []
    try:
        rng = random.Random(42)
        schedule = sorted((n / rate + rng.uniform(0, disorder_s), n) for n in range(len(lines)))
        started, wall = time.perf_counter(), time.time()
        for at, number in schedule:
            line = lines[number]
            delay = at - (time.perf_counter() - started)
            if delay > 0:
                await asyncio.sleep(delay)
            now = time.time()
            value = line.retimed(wall + number / rate if disorder_s else now, received=now)
            sent[line.event_id] = now
            pending.append(
                await producer.send(topic, value=value, key=line.key, headers=[(LINE_HEADER, str(number + 1).encode())])
            )
            if len(pending) >= 500:
                await asyncio.gather(*pending)
                pending.clear()
        await producer.flush()
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return sent


async def latency_once(settings: Any, lines: list[Line], rate: float, variant: str) -> dict[str, Any]:
    from topology.kafka_admin import ensure_topics
    from vexnudge.replay import delete_topics

    await ensure_topics(settings)
    # +d:SECONDS: the input arrives out of order, each line up to that much late
    disorder = sum(float(m[2:]) for m in variant.split("+") if m.startswith("d:"))
    variant = "+".join(m for m in variant.split("+") if not m.startswith("d:"))
    fetch_wait, options, roles = worker_variant(variant)
    worker = BenchWorker(
        settings.app_id,
        settings.topic_prefix,
        clock="live",
        fetch_max_wait_ms=fetch_wait,
        app_options=options,
        extra_args=[*roles, "--set", f"database_url={settings.database_url.get_secret_value()}"],
    ).start()
    out: dict[str, Any] = {"load_before": float(load_average().split()[0])}
    reader = OutputReader(settings)
    try:
        async with Watch(settings) as watch:
            # Warm-up: one copy of the classroom under other students, re-timed, at 500/s, so
            # every output topic has been written once (producer metadata, first-use paths).
            warm = classroom(1, tag="warm", id_base=WARM_ID_BASE)
            await paced_send(settings, warm, 500.0)
            await watch.until(watch.analysed, len(warm), worker=worker, timeout_s=180, interval_s=0.1)
            await asyncio.sleep(1.0)
            await reader.start()
            out["rss_idle_mib"] = rss_kib(worker.pid)[0] / 1024
            cpu0, t0 = cpu_seconds(worker.pid), time.time()
            sent = await paced_send(settings, lines, rate, disorder)
            out["send_s"] = time.time() - t0
            await watch.until(watch.analysed, len(lines) + len(warm), worker=worker, timeout_s=120, interval_s=0.1)
            out["cpu_busy"] = (cpu_seconds(worker.pid) - cpu0) / (time.time() - t0)
            # the last outputs reach the reader: held events come out a reorder window later
            await asyncio.sleep(2.0 + settings.reorder_window_s)
            out["rss_end_mib"], out["rss_peak_mib"] = (v / 1024 for v in rss_kib(worker.pid))
            out["load_after"] = float(load_average().split()[0])
    finally:
        await reader.stop()
        worker.stop()
    await delete_topics(settings)
    runs = [(recv - sent[eid], ts - sent[eid], sent[eid]) for eid, recv, ts in reader.runs if eid in sent]
    triggers = [
        (recv - sent[eid], ts - sent[eid], kind, sent[eid])
        for eid, kind, recv, ts in reader.triggers
        if eid in sent and kind != "inactive"
    ]
    out["runs"] = runs
    out["triggers"] = triggers
    out["trigger_types"] = Counter(t[2] for t in triggers)
    out["run_lines"] = sum(1 for line in lines if line.event_type == "runProject")
    out["n"] = len(lines)
    return out


def ms(values: list[float], q: float) -> str:
    return f"{percentile(values, q) * 1000:.1f}"


async def bench_latency(base: Any, lines: list[Line], rate: float, variants: list[str], repeats: int) -> None:
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for repeat in range(repeats):
        for variant in variants:
            settings = fresh(fresh_db(base), "lat")
            await create_db(base, settings)
            try:
                r = await latency_once(settings, lines, rate, variant)
            finally:
                await drop_db(base, settings)
            results[variant].append(r)
            trig = [t[0] for t in r["triggers"]]
            run = [t[0] for t in r["runs"]]
            print(
                f"latency run {repeat + 1} {variant:>8}: load {r['load_before']:.2f}->{r['load_after']:.2f}  "
                f"{r['n']:,} lines in {r['send_s']:.1f} s ({r['n'] / r['send_s']:.0f}/s)  "
                f"worker CPU {r['cpu_busy']:.0%} of a core  RSS {r['rss_idle_mib']:.0f}->{r['rss_end_mib']:.0f} "
                f"MiB  runs {len(run)}/{r['run_lines']} p50 {ms(run, 50)} p99 {ms(run, 99)} max {ms(run, 100)} ms"
                f"  triggers {len(trig)} p50 {ms(trig, 50)} p99 {ms(trig, 99)} max {ms(trig, 100)} ms  "
                f"types {dict(r['trigger_types'])}",
                flush=True,
            )
            await asyncio.sleep(1)
    rows = []
    for variant, runs in results.items():
        for label, index in (("runProject → vex.runs", "runs"), ("runProject → vex.triggers", "triggers")):
            pooled = [t[0] for r in runs for t in r[index]]
            stamped = [t[1] for r in runs for t in r[index]]
            p99s = [percentile([t[0] for t in r[index]], 99) * 1000 for r in runs]
            rows.append(
                (
                    variant,
                    label,
                    len(pooled),
                    ms(pooled, 50),
                    ms(pooled, 95),
                    ms(pooled, 99),
                    ms(pooled, 100),
                    f"{min(p99s):.1f}–{max(p99s):.1f}",
                    ms(stamped, 50),
                    ms(stamped, 99),
                    f"{median([r['cpu_busy'] for r in runs]):.0%}",
                    f"{median([r['rss_idle_mib'] for r in runs]):.0f} / {median([r['rss_end_mib'] for r in runs]):.0f}",
                    f"{median([r['load_before'] for r in runs]):.2f}",
                )
            )
    print()
    print(f"Latency at {rate:g} lines/s, live clock, {repeats} runs pooled per worker (ms):")
    print(
        table(
            [
                "worker",
                "path",
                "n",
                "p50",
                "p95",
                "p99",
                "max",
                "p99 range over runs",
                "to record timestamp p50",
                "to record timestamp p99",
                "worker CPU busy",
                "RSS MiB idle / end",
                "load",
            ],
            rows,
        )
    )
    kinds: Counter[str] = Counter()
    for r in next(iter(results.values())):
        kinds.update(t[2] for t in r["triggers"])
    print(f"triggers matched by type ({variants[0]}): {dict(kinds)}; goal p99 < {GOAL_P99_MS:g} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", default="throughput,latency")
    parser.add_argument("--copies", type=int, default=20, help="classroom copies for throughput (default 20)")
    parser.add_argument("--latency-copies", type=int, default=10, help="classroom copies for latency (default 10)")
    parser.add_argument("--rate", type=float, default=200.0, help="lines per second in the latency run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--variants",
        default="all",
        help="throughput workers: all, stream, then +fwN, +key=value, +s:FIELD=VALUE or +l:LEVEL",
    )
    parser.add_argument(
        "--latency-variants",
        default="all",
        help="latency workers: all, stream, then +fwN, +key=value, +s:FIELD=VALUE or +l:LEVEL",
    )
    parser.add_argument("--quick", action="store_true", help="4 copies (2 for latency), one repeat")
    args = parser.parse_args()
    if args.quick:
        args.copies, args.latency_copies, args.repeats = 4, 2, 1
    parts = set(args.part.split(","))
    base = stack_settings()

    async def go() -> None:
        if "throughput" in parts:
            lines = classroom_lines(args.copies)
            print(
                f"# pipeline throughput: {len(lines):,} events ({args.copies} x the sample classroom, "
                f"{sum(map(len, lines)) / len(lines):,.0f} bytes per line), {args.repeats} repeats; "
                f"{machine()}",
                flush=True,
            )
            await bench_throughput(base, lines, [v for v in args.variants.split(",") if v], args.repeats)
        if "latency" in parts:
            lat_lines = classroom(args.latency_copies)
            print(
                f"\n# pipeline latency: {len(lat_lines):,} lines ({args.latency_copies} x the sample classroom, "
                f"re-timed) at {args.rate:g}/s, {args.repeats} runs; {machine()}",
                flush=True,
            )
            await bench_latency(
                base, lat_lines, args.rate, [v for v in args.latency_variants.split(",") if v], args.repeats
            )

    asyncio.run(go())


if __name__ == "__main__":
    main()
