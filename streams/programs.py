"""Programs as the engine sees them: the scoring port and the program store.

The engine never parses XML itself; it asks a :class:`Scorer` (backed by
``tree_edit``) for a program's statistics and the distance between two
programs, and keeps the previous run's program text in a :class:`ProgramStore`
(a table in production, a dict in tests).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Protocol

import orjson


class UnusableWorkspace(Exception):
    """The workspace cannot be scored; ``reason`` is machine-readable."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class ProgramInfo:
    """Size statistics of a parsed program."""

    n_blocks: int
    n_stacks: int
    label_tree_size: int


class Scorer(Protocol):
    """Parses programs and measures the distance between two of them."""

    def inspect(self, xml: str | None) -> ProgramInfo:
        """Statistics of ``xml`` (None = empty program); raise :class:`UnusableWorkspace`."""

    def distance(self, before: str | None, after: str | None) -> int | None:
        """Tree-edit distance, or None when the pair is over the size guard."""


class ProgramStore(Protocol):
    """Run programs of one student, content-addressed by (session, digest).

    Content addressing makes a crashed-and-repeated event harmless: the
    previous run's program is still found under the digest its (older) state
    remembers, even if the repeated event's new program was already stored.
    """

    def get(self, session_id: str, program_digest: str) -> str | None: ...

    def put(self, session_id: str, program_digest: str, xml: str) -> None: ...

    def delete(self, session_id: str, program_digest: str) -> None: ...


def digest(xml: str | None) -> str:
    """Content digest of a workspace string (empty program = ``""``)."""
    return hashlib.sha1((xml or "").encode()).hexdigest()


class DictProgramStore:
    """In-memory :class:`ProgramStore` (tests and single-process tools)."""

    def __init__(self) -> None:
        self.programs: dict[tuple[str, str], str] = {}

    def get(self, session_id: str, program_digest: str) -> str | None:
        return self.programs.get((session_id, program_digest))

    def put(self, session_id: str, program_digest: str, xml: str) -> None:
        self.programs[(session_id, program_digest)] = xml

    def delete(self, session_id: str, program_digest: str) -> None:
        self.programs.pop((session_id, program_digest), None)


class MetricLog(Protocol):
    """The compact metric records of each session of one student, append-only.

    Kept outside the student's state so that an event appends one small record
    instead of rewriting the session's history.
    """

    def append(self, session_id: str, count: int, record: list[Any]) -> None:
        """Add the ``count``-th record (0-based) of the session."""

    def load(self, session_id: str, count: int, keep: int) -> list[list[Any]]:
        """The last ``keep`` of the session's ``count`` records, oldest first."""

    def drop(self, session_id: str, count: int) -> None:
        """Forget the session's records."""


CHUNK = 32


def chunks_to_keep(count: int, keep: int) -> range:
    """The chunk numbers that hold the last ``keep`` of ``count`` records."""
    if count <= 0:
        return range(0)
    first = max(0, count - keep) // CHUNK
    return range(first, (count - 1) // CHUNK + 1)


class ChunkedMetricLog:
    """A :class:`MetricLog` over a byte store, in chunks of :data:`CHUNK` records.

    A chunk is its records as JSON lines (orjson never writes a raw newline
    inside a value), so an event appends its record to the chunk's bytes, and
    the newlines count the records for the replace-on-repeat rule, without
    decoding the chunk.  A chunk written as one JSON array (before
    2026-11-30; it has no final newline) is read as well, and rewritten as
    lines on its next append.
    """

    def __init__(self, get: Any, put: Any, prefix: str, keep: int) -> None:
        self._get, self._put, self.prefix, self.keep = get, put, prefix, keep

    def _key(self, session_id: str, chunk: int) -> str:
        return f"{self.prefix}{session_id}\x1f{chunk}"

    def append(self, session_id: str, count: int, record: list[Any]) -> None:
        chunk, position = divmod(count, CHUNK)
        raw = (self._get(self._key(session_id, chunk)) or b"") if position else b""
        if raw and raw[-1:] != b"\n":  # the older form
            raw = _lines(orjson.loads(raw))
        if raw.count(b"\n") > position:  # a repeated append (after a crash) replaces, never duplicates
            raw = b"\n".join(raw.split(b"\n", position)[:position]) + b"\n"
        self._put(self._key(session_id, chunk), raw + orjson.dumps(record) + b"\n")
        stale = (count + 1 - self.keep) // CHUNK - 1
        if stale >= 0 and (count + 1 - self.keep) % CHUNK == 0:
            self._put(self._key(session_id, stale), None)

    def load(self, session_id: str, count: int, keep: int) -> list[list[Any]]:
        out: list[list[Any]] = []
        for chunk in chunks_to_keep(count, keep):
            out += _records(self._get(self._key(session_id, chunk)))
        return out[-keep:] if keep else []

    def drop(self, session_id: str, count: int) -> None:
        for chunk in chunks_to_keep(count, self.keep):
            self._put(self._key(session_id, chunk), None)


def _lines(records: list[Any]) -> bytes:
    return b"".join(orjson.dumps(record) + b"\n" for record in records)


def _records(raw: bytes | None) -> list[Any]:
    """A stored chunk's records: JSON lines, or one JSON array (the older form)."""
    if not raw:
        return []
    if raw[-1:] != b"\n":  # one JSON array: orjson writes no final newline
        return list(orjson.loads(raw))
    return list(orjson.loads(b"[" + raw[:-1].replace(b"\n", b",") + b"]"))


class DictMetricLog(ChunkedMetricLog):
    """In-memory :class:`MetricLog` (tests and single-process tools)."""

    def __init__(self, keep: int = 400) -> None:
        self.data: dict[str, bytes] = {}
        super().__init__(self.data.get, self._set, "", keep)

    def _set(self, key: str, value: bytes | None) -> None:
        if value is None:
            self.data.pop(key, None)
        else:
            self.data[key] = value
