"""The ``vexnudge`` command line.

Each sub-command lives in its own module of this package and exposes
``register(subparsers)``, which adds its parser and sets ``handler`` to a
function ``(args, settings) -> int``.  Heavy imports stay inside handlers so
``vexnudge --help`` is instant.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from pydantic import ValidationError
from pydantic_settings import SettingsError

from topology.settings import load_settings

#: Sub-command modules, in the order ``--help`` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "stack",
    "produce",
    "worker",
    "replay",
    "tail",
    "distance",
    "sanitize",
    "ask",
    "token",
    "gateway",
    "demo",
    "settings_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    """The full parser with every available sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="vexnudge",
        description="Stream-processing nudges for classrooms programming VEX robots.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"vexnudge.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"vexnudge.cli.{name}":
                continue
            raise
        module.register(subparsers)
    return parser


#: Commands that read students' telemetry (and so their XML) in this process or its children.
READS_TELEMETRY = frozenset({"worker", "gateway", "demo", "replay"})


def startup_warnings(command: str | None) -> list[str]:
    """Warnings about this machine for a command that reads untrusted input."""
    if command not in READS_TELEMETRY:
        return []
    from tree_edit.xmlsafe import expat_warning

    found = expat_warning()
    return [found] if found else []


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``vexnudge`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        settings = load_settings()
    except (ValidationError, SettingsError) as exc:  # a bad environment or .env
        print(f"vexnudge: invalid configuration: {exc}", file=sys.stderr)
        return 2
    for warning in startup_warnings(args.command):
        print(f"vexnudge: warning: {warning}", file=sys.stderr)
    try:
        return int(handler(args, settings) or 0)
    except KeyboardInterrupt:
        print("vexnudge: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
