"""Programs as the engine sees them: the scoring port and the program store.

The engine never parses XML itself; it asks a :class:`Scorer` (backed by
``tree_edit``) for a program's statistics and the distance between two
programs, and keeps the previous run's program text in a :class:`ProgramStore`
(a table in production, a dict in tests).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol


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
    """The previous scored run's program text per session of one student."""

    def get(self, session_id: str) -> str | None: ...

    def put(self, session_id: str, xml: str | None) -> None: ...


def digest(xml: str | None) -> str:
    """Content digest of a workspace string (empty program = ``""``)."""
    return hashlib.sha1((xml or "").encode()).hexdigest()


class DictProgramStore:
    """In-memory :class:`ProgramStore` (tests and single-process tools)."""

    def __init__(self) -> None:
        self.programs: dict[str, str | None] = {}

    def get(self, session_id: str) -> str | None:
        return self.programs.get(session_id)

    def put(self, session_id: str, xml: str | None) -> None:
        self.programs[session_id] = xml
