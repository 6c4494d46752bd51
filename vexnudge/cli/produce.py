"""``vexnudge produce``: publish recorded telemetry (NDJSON) to the raw topic."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from topology.settings import Settings
from vexnudge.cli.progress import Progress


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "produce",
        help="publish a recorded telemetry file (NDJSON) to the raw topic",
        description="Each line is sent as one record keyed by its student. Bad lines are "
        "sent too (the pipeline judges and dead-letters them) unless --skip-invalid.",
    )
    parser.add_argument("file", type=Path, help="telemetry file, one JSON envelope per line")
    pace = parser.add_mutually_exclusive_group()
    pace.add_argument("--speed", type=float, metavar="N", help="replay at N times the recorded pace")
    pace.add_argument("--rate", type=float, metavar="EPS", help="send at a steady EPS lines per second")
    pace.add_argument("--max", action="store_true", help="as fast as possible (the default)")
    parser.add_argument("--skip-invalid", action="store_true", help="do not send lines ingest would reject")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from streams.local import read_lines
    from topology.kafka_admin import ensure_topics
    from vexnudge.producer import ProduceStats, produce_lines

    if not args.file.is_file():
        print(f"vexnudge produce: no such file: {args.file}", file=sys.stderr)
        return 2
    lines = read_lines(args.file.read_bytes())
    progress = Progress(f"produce {args.file.name}", total=len(lines), unit="lines")

    def show(stats: ProduceStats) -> None:
        progress.set(stats.lines)

    try:
        asyncio.run(ensure_topics(settings))
        stats = asyncio.run(
            produce_lines(
                settings, lines, speed=args.speed, rate=args.rate, skip_invalid=args.skip_invalid, on_progress=show
            )
        )
    except Exception as exc:  # noqa: BLE001 - report broker problems clearly
        print(f"\nvexnudge produce: failed: {exc}\nIs the broker up? `vexnudge stack status`", file=sys.stderr)
        return 1
    progress.set(stats.lines)
    progress.close()
    refused = f", {stats.dead_lettered} over RAW_MAX_BYTES dead-lettered" if stats.dead_lettered else ""
    print(
        f"produced {stats.sent} of {stats.lines} lines ({stats.skipped} skipped{refused}), "
        f"{stats.bytes / 1e6:.2f} MB in {stats.seconds:.2f} s: {stats.rate:,.0f} events/s "
        f"to {settings.topic('vex.telemetry.raw')}"
    )
    return 0
