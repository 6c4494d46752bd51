"""The exception tree of :mod:`tree_edit`.

Every error raised on purpose by this package derives from :class:`TreeEditError`.
Both concrete errors are *permanent* for their input: retrying the same
workspace or the same pair gives the same answer, so callers should record
the outcome (an unscored run, a metric) and move on.
"""

from __future__ import annotations

from enum import StrEnum


class UnusableReason(StrEnum):
    """Why a run's workspace cannot be used (the keys of ``unscored_runs``)."""

    NO_PROJECT = "no_project"
    PROJECT_NOT_JSON = "project_not_json"
    PROJECT_NOT_OBJECT = "project_not_object"
    WORKSPACE_NOT_STRING = "workspace_not_string"
    XML_ERROR = "xml_error"


class NotComparableReason(StrEnum):
    """Why a pair of programs was not compared."""

    TOO_MANY_BLOCKS = "too_many_blocks"
    TOO_COSTLY = "too_costly"


class TreeEditError(Exception):
    """Root of every error this package raises on purpose."""


class WorkspaceError(TreeEditError):
    """A workspace string that is not a usable Blockly program.

    :param reason: machine-readable cause (always :attr:`UnusableReason.XML_ERROR`
        when raised by the parser).
    :param detail: the parser's own message (line and column of the problem).
    """

    def __init__(self, reason: UnusableReason, detail: str) -> None:
        super().__init__(f"unusable workspace ({reason.value}): {detail}")
        self.reason = reason
        self.detail = detail


class NotComparable(TreeEditError):
    """A pair too large (or too expensive) to compare within the configured limits.

    :param reason: which guard refused the pair.
    :param n_blocks: the block counts of the two programs.
    :param limit: the limit that was exceeded (blocks or cells of work).
    """

    def __init__(self, reason: NotComparableReason, n_blocks: tuple[int, int], limit: int) -> None:
        if reason is NotComparableReason.TOO_MANY_BLOCKS:
            hint = f"limit {limit} blocks per program; raise max_blocks to compare them"
        else:
            hint = f"the exact distance needs more than {limit} cells; raise max_cells"
        super().__init__(f"programs not compared ({reason.value}): {n_blocks[0]} and {n_blocks[1]} blocks, {hint}")
        self.reason = reason
        self.n_blocks = n_blocks
        self.limit = limit
