"""``vexnudge produce``: publish recorded telemetry (NDJSON) to the raw topic."""

from __future__ import annotations

import argparse
import asyncio
import math
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
    disorder = parser.add_argument_group(
        "arrival disorder",
        "Send the lines in a seeded arrival order instead of file order: each line arrives at its "
        "event time plus a random delay of at most SECONDS (rejected and blank lines stay next to "
        "the line before them); each record keeps its file line number. Pacing follows the sent order.",
    )
    disorder.add_argument(
        "--shuffle-within",
        type=_seconds,
        metavar="SECONDS",
        help="delay each line at random by 0 to SECONDS after its event time (0: event-time order)",
    )
    disorder.add_argument(
        "--seed", type=int, metavar="N", help="the random seed: the same seed, the same order (default: 0)"
    )
    disorder.add_argument(
        "--resend",
        type=_fraction,
        default=0.0,
        metavar="FRACTION",
        help="also send this fraction of the events a second time, later within the bound "
        "(0 <= FRACTION < 1; default: 0)",
    )
    parser.set_defaults(handler=run, parser=parser)


def _seconds(text: str) -> float:
    """A delay bound: a finite number of seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0, not {text}")
    return value


def _fraction(text: str) -> float:
    """A resend fraction in [0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a fraction: {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be a fraction in [0, 1), not {text}")
    return value


def sent_order(args: argparse.Namespace, lines: list[bytes]) -> tuple[list[bytes], list[int] | None, str]:
    """The lines in the order to send them, their file line numbers (None: file order) and a note for the summary."""
    if args.shuffle_within is None:
        return lines, None, ""
    from vexnudge.disorder import arrival_order

    seed = 0 if args.seed is None else args.seed
    order = arrival_order(lines, args.shuffle_within, seed, args.resend)
    resent = len(order) - len(lines)
    note = f" in arrival order (delays up to {args.shuffle_within:g} s, seed {seed}, {resent} resent)"
    return [line for _, line in order], [number for number, _ in order], note


def _misused(args: argparse.Namespace) -> str | None:
    """Why the disorder options do not go together, if they do not."""
    if args.shuffle_within is None:
        for given, name in ((args.seed is not None, "--seed"), (args.resend > 0, "--resend")):
            if given:
                return f"{name} needs --shuffle-within SECONDS"
    return None


def run(args: argparse.Namespace, settings: Settings) -> int:
    from streams.local import read_lines
    from topology.kafka_admin import ensure_topics
    from vexnudge.producer import ProduceStats, produce_lines

    if problem := _misused(args):
        args.parser.error(problem)  # exits 2 with the usage
    if not args.file.is_file():
        print(f"vexnudge produce: no such file: {args.file}", file=sys.stderr)
        return 2
    lines, numbers, note = sent_order(args, read_lines(args.file.read_bytes()))
    progress = Progress(f"produce {args.file.name}", total=len(lines), unit="lines")

    def show(stats: ProduceStats) -> None:
        progress.set(stats.lines)

    try:
        asyncio.run(ensure_topics(settings))
        stats = asyncio.run(
            produce_lines(
                settings,
                lines,
                speed=args.speed,
                rate=args.rate,
                skip_invalid=args.skip_invalid,
                on_progress=show,
                numbers=numbers,
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
        f"to {settings.topic('vex.telemetry.raw')}{note}"
    )
    return 0
