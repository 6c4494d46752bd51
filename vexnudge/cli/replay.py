"""``vexnudge replay``: a recorded file through the real broker, outputs to files."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

from topology.settings import Settings
from vexnudge.cli.messages import kafka_unreachable
from vexnudge.cli.progress import Progress


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "replay",
        help="replay a telemetry file through the broker into a fresh app; write the outputs",
        description="Produces FILE into fresh topics, runs a worker in event-time mode until the "
        "input is consumed, and writes the scored runs, triggers, episodes and dead "
        "letters it observed as JSON lines in DIR.",
    )
    parser.add_argument("file", type=Path)
    parser.add_argument("--out", type=Path, required=True, metavar="DIR")
    parser.add_argument(
        "--golden-format", action="store_true", help="also write summary.json in the shape of the golden files"
    )
    parser.add_argument("--keep-topics", action="store_true", help="keep the replay's topics afterwards")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the worker")
    parser.set_defaults(handler=run)


def _reporter() -> object:
    bars: dict[str, Progress] = {}

    def report(stage: str, done: int, total: int) -> None:
        bar = bars.get(stage)
        if bar is None:
            for other in bars.values():
                other.close()
            bars.clear()
            bar = bars[stage] = Progress(stage, total=total, unit="records")
        bar.set(done, total)

    report.bars = bars  # type: ignore[attr-defined]
    return report


def run(args: argparse.Namespace, settings: Settings) -> int:
    from aiokafka.errors import KafkaConnectionError

    from streams.local import read_lines
    from streams.summary import build_summary
    from vexnudge.replay import delete_topics, fresh_settings, replay, write_outputs

    if not args.file.is_file():
        print(f"vexnudge replay: no such file: {args.file}", file=sys.stderr)
        return 2
    data = args.file.read_bytes()
    lines = read_lines(data)
    settings = fresh_settings(settings)
    report = _reporter()
    reachable = True
    try:
        result = asyncio.run(replay(settings, lines, report=report, timeout_s=args.timeout))  # type: ignore[arg-type]
    except KafkaConnectionError as exc:
        reachable = False
        print("\n" + kafka_unreachable("replay", settings, exc), file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a clear message, not a traceback
        print(f"\nvexnudge replay: failed: {exc}", file=sys.stderr)
        return 1
    finally:
        for bar in report.bars.values():  # type: ignore[attr-defined]
            bar.close()
        if not args.keep_topics and reachable:
            try:
                asyncio.run(delete_topics(settings))
            except Exception as exc:  # noqa: BLE001 - the outputs matter more than the clean-up
                print(
                    f"vexnudge replay: could not delete the replay's topics ({settings.topic_prefix}…): {exc}",
                    file=sys.stderr,
                )
    files = write_outputs(result, args.out)
    if args.golden_format:
        from streams.config import EngineConfig
        from streams.scoring import TreeEditScorer

        summary = build_summary(
            result.observed,
            input_name=args.file.name,
            input_sha256=hashlib.sha256(data).hexdigest(),
            input_report=result.input_report(len(lines)),
            config=EngineConfig.from_settings(settings),
            scorer=TreeEditScorer.from_settings(settings),
        )
        (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    _print_summary(result, files, args.out)
    return 0


def _print_summary(result: object, files: dict[str, Path], out: Path) -> None:
    obs = result.observed  # type: ignore[attr-defined]
    by_type = Counter(t.type.value for t in obs.triggers)
    wall = result.wall_s  # type: ignore[attr-defined]
    n = len(obs.events)
    print(f"replayed {n} events in {wall:.1f} s ({n / wall if wall else 0:,.0f} events/s end to end)")
    print(
        f"  runs {len(obs.runs)}, episodes {len(obs.episodes)}, pauses {len(obs.pauses)}, dead letters {len(obs.dead)}"
    )
    print(
        "  triggers " + ", ".join(f"{k} {v}" for k, v in sorted(by_type.items())) + f" (total {sum(by_type.values())})"
    )
    print(f"  written to {out}/: " + ", ".join(p.name for p in files.values()))
