"""Benchmark: ingest throughput on the real broker, next to a raw aiokafka ceiling.

Run ``.venv/bin/python bench/ingest.py`` with the local stack up
(``vexnudge stack up``; the same STACK_DIR / KAFKA_PORT / POSTGRES_PORT).
Options: ``--copies N`` (the sample classroom N times over, default 20 =
20,140 events), ``--repeats N`` (default 3), ``--variants all,ingest`` (see
below), ``--quick`` (copies 4, one repeat).

Each repeat, for each variant, on fresh topics and a fresh consumer group:

1. a worker subprocess starts: ``all`` is the real ``vexnudge worker`` (every
   agent: ingest, analysis, feedback and the event store, timers; replay
   clock, commit interval 0.2 s, a throwaway PostgreSQL database); ``ingest``
   is the same worker with only the ingest agent registered (nothing else
   consumes or writes, so it is ingest's own capacity);
2. one warm-up line goes through (the worker has joined its group and owns its
   partitions);
3. the multiplied classroom (every copy of a student is a new student, fresh
   envelope ids: no dedupe hit; lines interleaved so each student's order holds)
   is produced as fast as possible with ``produce_lines`` from this process;
4. timed from the first send to: every normalized event on ``vex.events`` (end
   offsets; that is the ingest rate) and the worker's committed offset of the
   raw topic covering every line (the ingest rate "to committed");
5. the worker stops, and plain aiokafka consumes the same raw topic from the
   beginning (``getmany``, no group) decoding every line and its
   ``raw_message`` with orjson: the ceiling of any Python consumer here.

The producer, the worker and the broker share the machine's two cores during
step 4; the ceiling runs alone.  Figures are per repeat and the median.

Variants, for experiments against the shipped worker in the same run: append
``+key=value`` to pass a ``faust.App`` keyword (``all+consumer_max_fetch_size=1048576``
is the worker before the 4 MiB fetch size), or ``+fwN`` to give Faust's consumer
``fetch_max_wait_ms=N`` (it hard-codes 1500; not a Faust setting).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    BenchWorker,
    Watch,
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
    produce_fast,
    raw_ceiling,
    rss_kib,
    stack_settings,
    table,
)
from topology import topics as T

WARMUP_LINE = (
    b'{"id": 1, "studentID": "bench-warmup", "raw_message": "{\\"studentID\\": \\"bench-warmup\\", '
    b'\\"sessionID\\": \\"warm\\", \\"timestamp\\": \\"2026-06-15T12:59:00Z\\", '
    b'\\"eventType\\": \\"menuOpen\\"}"}'
)


async def warm_up(settings: object, watch: Watch, worker: BenchWorker, *, analysis: bool) -> None:
    """One line through the worker: it has joined and owns its partitions."""
    from vexnudge.producer import produce_lines

    await produce_lines(settings, [WARMUP_LINE])  # type: ignore[arg-type]
    await watch.until(
        watch.analysed if analysis else lambda: watch.committed(T.RAW.name),
        1,
        worker=worker,
        timeout_s=180,
        interval_s=0.1,
    )


def parse_variant(variant: str) -> tuple[list[str] | None, int | None, list[str]]:
    """``all`` (the real worker) or ``ingest`` (only the ingest agent registered), then
    optionally ``+fwN`` (Faust's consumer with ``fetch_max_wait_ms=N`` instead of the
    1500 it hard-codes) and ``+key=value`` (a ``faust.App`` keyword set or overridden):
    experiments only, the shipped worker is plain ``all``."""
    name, *mods = variant.split("+")
    if name not in ("all", "ingest"):
        raise SystemExit(f"unknown variant {variant!r}: all or ingest, then +fwN or +key=value")
    fetch_wait, options = None, []
    for mod in mods:
        if "=" in mod:
            options.append(mod)
        elif mod.startswith("fw") and mod[2:].isdigit():
            fetch_wait = int(mod[2:])
        else:
            raise SystemExit(f"unknown variant modifier {mod!r} in {variant!r}")
    return (None if name == "all" else ["ingest"]), fetch_wait, options


async def run_once(settings: object, lines: list[bytes], variant: str, db_url: str | None) -> dict[str, float]:
    from topology.kafka_admin import ensure_topics
    from vexnudge.replay import delete_topics

    await ensure_topics(settings)  # type: ignore[arg-type]
    extra = ["--commit-interval", "0.2"]
    if db_url:
        extra += ["--set", f"database_url={db_url}"]
    agents, fetch_wait, options = parse_variant(variant)
    worker = BenchWorker(
        settings.app_id,
        settings.topic_prefix,
        clock="replay",  # type: ignore[attr-defined]
        agents=agents,
        fetch_max_wait_ms=fetch_wait,
        app_options=options,
        extra_args=extra,
    ).start()
    n = len(lines)
    out: dict[str, float] = {"n": n, "load": float(load_average().split()[0])}
    try:
        async with Watch(settings) as watch:
            await warm_up(settings, watch, worker, analysis=agents is None)
            out["rss_idle_mib"] = rss_kib(worker.pid)[0] / 1024
            cpu0 = cpu_seconds(worker.pid)
            produce = asyncio.ensure_future(produce_fast(settings, lines))
            t_events = await watch.until(lambda: watch.end(T.EVENTS.name), n + 1, worker=worker)
            t_commit = await watch.until(lambda: watch.committed(T.RAW.name), n + 1, worker=worker)
            started, produce_s = await produce
            out["cpu_s"] = cpu_seconds(worker.pid) - cpu0
            out["rss_end_mib"], peak = (v / 1024 for v in rss_kib(worker.pid))
            out["rss_peak_mib"] = peak
            out["produce_s"] = produce_s
            out["events_s"] = t_events - started
            out["commit_s"] = t_commit - started
    finally:
        worker.stop()
    ceiling = await raw_ceiling(settings, T.RAW.name, n + 1)
    out["ceiling"] = ceiling.rate
    out["mb"] = ceiling.bytes / 1e6
    await delete_topics(settings)  # type: ignore[arg-type]
    return out


async def one_variant(base: object, lines: list[bytes], variant: str) -> dict[str, float]:
    """One run on fresh topics; the whole worker also gets a throwaway database."""
    if parse_variant(variant)[0] is not None:
        return await run_once(fresh(base, "ingest"), lines, variant, None)
    settings = fresh(fresh_db(base), "ingest")
    await create_db(base, settings)
    try:
        return await run_once(settings, lines, variant, settings.database_url.get_secret_value())
    finally:
        await drop_db(base, settings)


def checks_cost(lines: list[bytes], repeats: int) -> None:
    """The CPU cost per line of the hostile-line screen and the bounded side fields
    (``streams.screen``), as a same-run A/B of ``decode_line`` with them and with
    them replaced by no-ops, the two alternating ``repeats`` times (median)."""
    import streams.ingest as ingest

    screen, build = ingest._screen, ingest._build_event
    passthrough = {
        "label_text": ingest.label_text,
        "short_text": ingest.short_text,
        "clipped_text": ingest.clipped_text,
    }

    def timed() -> float:
        started = time.process_time()
        for line in lines:
            ingest.decode_line(line)
        return (time.process_time() - started) / len(lines)

    def unchecked(on: bool) -> None:
        ingest._screen = (lambda *_a: None) if on else screen  # type: ignore[assignment]
        for name, real in passthrough.items():
            setattr(ingest, name, (lambda v: v if isinstance(v, str) else None) if on else real)
        ingest._build_event = build

    with_checks, without = [], []
    for _ in range(repeats):
        unchecked(True)
        without.append(timed())
        unchecked(False)
        with_checks.append(timed())
    a, b = median(with_checks), median(without)
    print(
        f"decode_line with the hostile-line checks: {a * 1e6:.2f} µs CPU per line, without: {b * 1e6:.2f} "
        f"(the checks: {(a - b) * 1e6:+.2f} µs per line, {a / b - 1:+.1%}; median of {repeats} alternating runs "
        f"over {len(lines):,} lines)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=20, help="sample classroom copies (default 20)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--variants",
        default="all,ingest",
        help="all (the real worker), ingest (ingest agent only); +key=value, +fwN: experiments",
    )
    parser.add_argument("--quick", action="store_true", help="4 copies, one repeat")
    parser.add_argument(
        "--checks-only",
        action="store_true",
        help="only the cost of the hostile-line checks per line (no broker needed)",
    )
    args = parser.parse_args()
    if args.quick:
        args.copies, args.repeats = 4, 1
    lines = classroom_lines(args.copies)
    checks_cost(lines, max(args.repeats, 5))
    if args.checks_only:
        return
    variants = [v for v in args.variants.split(",") if v]
    base = stack_settings()
    print(
        f"# ingest benchmark: {len(lines):,} events ({args.copies} x the sample classroom, "
        f"{sum(map(len, lines)) / len(lines):,.0f} bytes per line), {args.repeats} repeats; {machine()}",
        flush=True,
    )
    results: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    for repeat in range(args.repeats):
        for variant in variants:
            r = asyncio.run(one_variant(base, lines, variant))
            results[variant].append(r)
            n = r["n"]
            print(
                f"repeat {repeat + 1} {variant}: load {r['load']:.2f}  produce {r['produce_s']:.2f} s  "
                f"to vex.events {fmt_rate(n / r['events_s'])}/s  to committed {fmt_rate(n / r['commit_s'])}/s  "
                f"ceiling {fmt_rate(r['ceiling'])}/s  ratio {n / r['events_s'] / r['ceiling']:.1%}  "
                f"worker CPU {r['cpu_s'] / n * 1e6:.0f} us/event  RSS {r['rss_idle_mib']:.0f}->"
                f"{r['rss_peak_mib']:.0f} MiB",
                flush=True,
            )
            time.sleep(1)
    print()
    rows = []
    for variant, runs in results.items():
        n = runs[0]["n"]
        ev = [n / r["events_s"] for r in runs]
        co = [n / r["commit_s"] for r in runs]
        ce = [r["ceiling"] for r in runs]
        ratio = [n / r["events_s"] / r["ceiling"] for r in runs]
        rows.append(
            (
                variant,
                f"{int(n):,}",
                fmt_rate(median(ev)),
                f"{fmt_rate(min(ev))}–{fmt_rate(max(ev))}",
                fmt_rate(median(co)),
                fmt_rate(median(ce)),
                f"{median(ratio):.1%}",
                f"{median([r['produce_s'] for r in runs]):.2f}",
                f"{median([r['cpu_s'] / n * 1e6 for r in runs]):.0f}",
                f"{median([r['rss_idle_mib'] for r in runs]):.0f} / {median([r['rss_peak_mib'] for r in runs]):.0f}",
                f"{median([r['load'] for r in runs]):.2f}",
            )
        )
    from streams.ingest import decode_line

    started = time.process_time()
    for line in lines:
        decode_line(line)
    core = (time.process_time() - started) / len(lines)
    print(f"decode_line alone (this process, no Kafka): {core * 1e6:.0f} µs CPU per line")
    print(
        table(
            [
                "worker",
                "events",
                "ingest events/s (median)",
                "range",
                "to raw committed /s",
                "raw ceiling /s",
                "ratio",
                "produce s",
                "worker CPU µs/event",
                "RSS MiB idle / peak",
                "load",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
