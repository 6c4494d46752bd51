"""``vexnudge distance``: tree edit distance between Blockly workspaces.

Two forms:

* ``vexnudge distance A.xml B.xml`` prints the distance between two workspace
  files (``-`` reads one of them from stdin); exit 1 when a workspace is not
  usable or the pair is too large to compare.
* ``vexnudge distance --pairs FILE.jsonl`` reads lines ``{"a": xml, "b": xml}``
  and writes, in order, one line ``{"distance": n}`` or ``{"error": reason}``
  per input line to stdout, then a timing summary on stderr.  Reasons:
  ``empty_line``, ``invalid_utf8``, ``invalid_json``, ``not_an_object``,
  ``missing_a``/``missing_b``, ``a_not_string``/``b_not_string``, ``xml_error``,
  ``too_many_blocks``, ``too_costly``.  Per-line errors do not change the exit status.

The block limit and cache size come from the settings (``TREE_EDIT_MAX_BLOCKS``,
``TREE_EDIT_CACHE_SIZE``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager as ContextManager
from contextlib import nullcontext
from pathlib import Path
from typing import IO, TYPE_CHECKING, TextIO

from topology.settings import Settings

if TYPE_CHECKING:
    from tree_edit import DistanceCalculator


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "distance",
        help="tree edit distance between Blockly workspaces",
        description="Print the exact tree edit distance between two workspace XML files, "
        "or between the a/b workspaces of every line of a JSON-lines file.",
    )
    parser.add_argument("files", nargs="*", metavar="FILE.xml", help="the two workspace files ('-' = stdin)")
    parser.add_argument("--pairs", metavar="FILE.jsonl", help='JSON lines {"a": xml, "b": xml} (\'-\' = stdin)')
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from tree_edit import DistanceCalculator

    pairs_mode = args.pairs is not None
    if pairs_mode == bool(args.files) or (not pairs_mode and len(args.files) != 2):
        print("vexnudge distance: give two workspace files or --pairs FILE.jsonl", file=sys.stderr)
        return 2
    calc = DistanceCalculator(cache_size=settings.tree_edit_cache_size, max_blocks=settings.tree_edit_max_blocks)
    try:
        if pairs_mode:
            with _open_binary(args.pairs) as source:
                return run_pairs(calc, source, sys.stdout, sys.stderr)
        texts = [_read(name) for name in args.files]
    except (OSError, UnicodeDecodeError) as exc:
        print(f"vexnudge distance: {exc}", file=sys.stderr)
        return 2
    return _run_two(calc, args.files, texts)


def _run_two(calc: DistanceCalculator, names: list[str], texts: list[str]) -> int:
    from tree_edit import NotComparable, WorkspaceError, parse_workspace

    try:
        print(calc.between_xml(texts[0], texts[1]))
    except WorkspaceError as exc:
        name = names[0]
        try:
            parse_workspace(texts[0])
        except WorkspaceError:
            pass
        else:
            name = names[1]
        print(f"vexnudge distance: {name}: {exc}", file=sys.stderr)
        return 1
    except NotComparable as exc:
        print(f"vexnudge distance: {exc}", file=sys.stderr)
        return 1
    return 0


def run_pairs(calc: DistanceCalculator, lines: Iterable[bytes], out: TextIO, err: TextIO) -> int:
    """Answer every line of a pairs file in order, then summarise on ``err``."""
    started = time.perf_counter()
    timings: list[float] = []
    errors = 0
    for line in lines:
        begun = time.perf_counter()
        answer = pair_answer(calc, line)
        timings.append(time.perf_counter() - begun)
        errors += "error" in answer
        out.write(json.dumps(answer) + "\n")
    out.flush()
    total = time.perf_counter() - started
    median_ms = statistics.median(timings) * 1e3 if timings else 0.0
    stats = calc.stats
    err.write(
        f"pairs: {len(timings)}  errors: {errors}  total: {total:.3f} s  "
        f"median: {median_ms:.3f} ms/pair  (computed {stats.computed}, identical "
        f"{stats.identical}, cached {stats.cache_hits}, not comparable {stats.not_comparable})\n"
    )
    return 0


def pair_answer(calc: DistanceCalculator, raw: bytes) -> dict[str, int | str]:
    """``{"distance": n}`` or ``{"error": reason}`` for one input line."""
    from tree_edit import NotComparable, WorkspaceError
    from vexnudge.cli.jsonl import read_record

    pair = read_record(raw, ("a", "b"))
    if isinstance(pair, str):
        return {"error": pair}
    try:
        return {"distance": calc.between_xml(pair["a"], pair["b"])}
    except WorkspaceError as exc:
        return {"error": exc.reason.value}
    except NotComparable as exc:
        return {"error": exc.reason.value}


def _read(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    return Path(name).read_text(encoding="utf-8")


def _open_binary(name: str) -> ContextManager[IO[bytes]]:
    """The pairs file, read as bytes so each line's encoding is checked on its own."""
    if name == "-":
        return nullcontext(sys.stdin.buffer)
    return open(name, "rb")
