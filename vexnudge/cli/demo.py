"""``vexnudge demo``: the whole product on the local stack, with nudges visible."""

from __future__ import annotations

import argparse
import sys

from topology.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "demo",
        help="run worker + gateway and replay the sample classroom with nudges on",
        description="Starts a worker (proactive lane on) and the SSE gateway on the local stack, "
        "replays the sample classroom and prints the teacher board's and a few "
        "students' page URLs, where triggers and nudges appear live. Needs "
        "`vexnudge stack up` (scripts/demo.sh does it).",
    )
    parser.add_argument(
        "--speed", type=float, default=30.0, help="replay at N times the recorded pace (default 30: 55 minutes in ~2)"
    )
    parser.add_argument("--max", action="store_true", help="replay as fast as possible")
    parser.add_argument("--students", type=int, default=3, help="student page URLs to print")
    parser.add_argument("--port", type=int, default=0, help="gateway port (default GATEWAY_PORT)")
    parser.add_argument(
        "--exit", action="store_true", help="stop once the replay is done instead of keeping the pages up"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Ctrl-C, SIGTERM and SIGHUP stop the demo and its children (exit 0); a
    child that fails to start or stops fails it with the child's own words (exit 1)."""
    from vexnudge.childproc import ChildFailed
    from vexnudge.demo import run_demo

    try:
        return run_demo(
            settings,
            speed=None if args.max else args.speed,
            students=args.students,
            port=args.port or settings.gateway_port,
            keep_running=not args.exit,
        )
    except KeyboardInterrupt:
        print("\ndemo: stopped", file=sys.stderr)
        return 0
    except ChildFailed as exc:
        print(f"demo: failed: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - one clear message
        print(f"demo: failed: {exc}\nIs the local stack up? `vexnudge stack status`", file=sys.stderr)
        return 1
