"""``vexnudge stack up|down|status|migrate``: the local Kafka broker and PostgreSQL.

See docs/stack.md.  Exit codes: 0 success (``status``: every selected service
healthy), 1 a service is not healthy or an operation failed, 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from topology.settings import Settings

_SERVICES = ("kafka", "postgres")


def register(subparsers: Any) -> None:
    """Add ``stack`` and its sub-commands."""
    parser = subparsers.add_parser(
        "stack",
        help="start/stop the local Kafka broker and PostgreSQL",
        description="The local stack: a real Apache Kafka broker (KRaft, one node) and a "
        "throwaway PostgreSQL cluster, both on 127.0.0.1, data and logs under "
        "STACK_DIR (.vexnudge/ of the checkout).",
    )
    actions = parser.add_subparsers(dest="stack_action", metavar="ACTION")
    actions.required = True

    up = actions.add_parser("up", help="start what is not running, then apply the migrations")
    _add_only(up)
    up.add_argument("--fresh", action="store_true", help="stop the selected services and wipe their data first")
    up.set_defaults(handler=_up)

    down = actions.add_parser("down", help="stop the services this stack started")
    _add_only(down)
    down.add_argument("--wipe", action="store_true", help="also delete their data")
    down.set_defaults(handler=_down)

    status = actions.add_parser("status", help="each service's state, pid, port and logs")
    _add_only(status)
    status.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="print nothing; exit 0 iff every selected service is healthy",
    )
    status.set_defaults(handler=_status)

    migrate = actions.add_parser("migrate", help="apply the schema migrations to DATABASE_URL")
    migrate.set_defaults(handler=_migrate)


def _add_only(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", choices=_SERVICES, action="append", help="act on this service only (repeatable)")


def _up(args: argparse.Namespace, settings: Settings) -> int:
    from vexnudge.stack import lifecycle
    from vexnudge.stack.report import Reporter

    return _guard(lambda: lifecycle.up(settings, Reporter(), args.only, fresh=args.fresh))


def _down(args: argparse.Namespace, settings: Settings) -> int:
    from vexnudge.stack import lifecycle
    from vexnudge.stack.report import Reporter

    return _guard(lambda: lifecycle.down(settings, Reporter(), args.only, wipe=args.wipe))


def _status(args: argparse.Namespace, settings: Settings) -> int:
    from vexnudge.stack import lifecycle

    states = lifecycle.status(settings, args.only)
    if not args.quiet:
        print(lifecycle.format_status(states))
    return 0 if all(s.healthy for s in states) else 1


def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    from vexnudge.stack import lifecycle
    from vexnudge.stack.report import Reporter

    return _guard(lambda: lifecycle.migrate(settings, Reporter()))


def _guard(action: Any) -> int:
    """Run ``action``; print a known failure as one clear message and exit 1."""
    from delivery.migrate import MigrationError
    from vexnudge.stack.errors import StackError

    try:
        action()
    except (StackError, MigrationError) as exc:
        print(f"vexnudge stack: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a database that does not answer, a folder we cannot write
        print(f"vexnudge stack: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0
