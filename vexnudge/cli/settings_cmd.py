"""``vexnudge settings``: every setting, its variable, current value and meaning."""

from __future__ import annotations

import argparse
from pathlib import Path

from pydantic import SecretStr

from topology.settings import PROJECT_ROOT, Settings


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "settings",
        help="print every setting with its environment variable and current value",
        description="Secrets are masked. --markdown prints the table in docs/configuration.md.",
    )
    parser.add_argument("--markdown", action="store_true", help="a Markdown table of the defaults")
    parser.set_defaults(handler=run)


def _shown(value: object) -> str:
    if isinstance(value, SecretStr):
        return "(set, hidden)" if value.get_secret_value() else "(empty)"
    if isinstance(value, frozenset | set):
        return ",".join(sorted(value)) or "(none)"
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    return "(unset)" if value is None else str(value)


def _doc(text: str | None) -> str:
    text = (text or "").strip()
    return text.split(":", 1)[1].strip() if ":" in text.split(" ", 1)[0] else text


def markdown() -> str:
    """The configuration reference table (defaults, not the current environment)."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        default = field.get_default(call_default_factory=True)
        shown = _shown(default).replace(str(PROJECT_ROOT), "<checkout>").replace(str(Path.home()), "~")
        rows.append(f"| `{name.upper()}` | `{shown}` | {_doc(field.description)} |")
    return "\n".join(rows) + "\n"


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.markdown:
        print(markdown(), end="")
        return 0
    width = max(len(n) for n in Settings.model_fields)
    for name, field in Settings.model_fields.items():
        print(f"{name.upper():<{width}}  {_shown(getattr(settings, name)):<40}  {_doc(field.description)}")
    return 0
