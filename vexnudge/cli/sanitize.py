"""``vexnudge sanitize``: clean model replies the way the feedback stage does.

``vexnudge sanitize FILE.jsonl`` reads lines ``{"text": raw}`` (``-`` reads
stdin) and writes, in order, one line per input line: ``{"text": cleaned}``,
or ``{"error": reason}`` for a line that cannot be read.  Reasons:
``empty_line``, ``invalid_utf8``, ``invalid_json``, ``not_an_object``,
``missing_text``, ``text_not_string``.  Cleaning is the sanitizer followed by
the length rules (``--no-trim`` skips the length rules).  Output goes to
stdout or ``--out FILE``; a summary goes to stderr.  Per-line errors do not
change the exit status; an unreadable input or output file exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from contextlib import AbstractContextManager as ContextManager
from contextlib import nullcontext
from typing import IO, TextIO

from topology.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "sanitize",
        help="clean model replies (JSON lines) like the feedback stage",
        description='Read JSON lines {"text": raw} and write {"text": cleaned} per line, in order.',
    )
    parser.add_argument("file", metavar="FILE.jsonl", help="input JSON lines ('-' = stdin)")
    parser.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    parser.add_argument("--no-trim", action="store_true", help="sanitize only; skip the sentence and word limits")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    del settings  # the cleaning rules have no settings
    try:
        with _open_in(args.file) as source, _open_out(args.out) as out:
            counts = sanitize_lines(source, out, trim=not args.no_trim)
    except OSError as exc:
        print(f"vexnudge sanitize: {exc}", file=sys.stderr)
        return 2
    print(
        f"sanitize: lines: {counts['lines']}  cleaned: {counts['cleaned']}  "
        f"changed: {counts['changed']}  emptied: {counts['emptied']}  errors: {counts['errors']}",
        file=sys.stderr,
    )
    return 0


def sanitize_lines(lines: Iterable[bytes], out: TextIO, *, trim: bool = True) -> dict[str, int]:
    """Answer every input line in order on ``out``; return the counts."""
    counts = {"lines": 0, "cleaned": 0, "changed": 0, "emptied": 0, "errors": 0}
    for raw in lines:
        counts["lines"] += 1
        answer = line_answer(raw, trim=trim)
        if "error" in answer:
            counts["errors"] += 1
        else:
            counts["cleaned"] += 1
            counts["changed"] += answer["text"] != _original(raw)
            counts["emptied"] += answer["text"] == ""
        out.write(json.dumps(answer, ensure_ascii=False) + "\n")
    out.flush()
    return counts


def line_answer(raw: bytes, *, trim: bool = True) -> dict[str, str]:
    """``{"text": cleaned}`` or ``{"error": reason}`` for one input line."""
    from feedback.sanitize import clean_reply
    from vexnudge.cli.jsonl import read_record

    record = read_record(raw, ("text",))
    if isinstance(record, str):
        return {"error": record}
    return {"text": clean_reply(record["text"], trim=trim)}


def _original(raw: bytes) -> str:
    text: str = json.loads(raw.decode("utf-8"))["text"]
    return text


def _open_in(name: str) -> ContextManager[IO[bytes]]:
    """The input, read as bytes so each line's encoding is checked on its own."""
    if name == "-":
        return nullcontext(sys.stdin.buffer)
    return open(name, "rb")


def _open_out(name: str | None) -> ContextManager[TextIO]:
    if name is None:
        return nullcontext(sys.stdout)
    return open(name, "w", encoding="utf-8")
