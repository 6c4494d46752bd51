"""Permanent or transient: what a failed database write means for its record.

A sink that retries every failure holds its whole lane on one record the
database will never take (a number out of range, an invalid timestamp), as
if the database were down.  :func:`classify` tells the two apart, from the
exception alone (pure, table-driven):

- :attr:`Disposition.RETRY` — the database could not be reached or could not
  work right now (connection lost or refused, timeouts, SQLSTATE classes 08,
  53, 57, 40, 55, 58, XX), or it is set up wrong for every record alike
  (classes 28, 3D, 42: authentication, a missing database, schema or
  privilege — an operator fixes it and the held records go through).  Retry
  with backoff; nothing is dropped.
- :attr:`Disposition.REFUSE` — the database refused *this* record: a data
  exception (class 22, asyncpg's :class:`~asyncpg.exceptions.DataError` also
  for parameters it cannot encode), an integrity violation (class 23; the
  idempotent conflicts are ``ON CONFLICT DO NOTHING`` and never raise), a
  limit (class 54), a check raised by the database (P0); or any other error
  that is not about the connection.  Retrying cannot help: the caller
  dead-letters the record and goes on.

:func:`write_or_split` applies it to a batch: when the batch is refused, its
records are written one by one so that only the refused ones are left out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, TypeVar

import asyncpg

T = TypeVar("T")


class Disposition(StrEnum):
    """What to do with a record whose write failed."""

    RETRY = "retry"
    REFUSE = "refuse"


#: SQLSTATE classes (first two characters) that say "not now" or "not set up":
#: never the record's fault.
RETRY_CLASSES: frozenset[str] = frozenset(
    {
        "08",  # connection exception
        "53",  # insufficient resources (disk full, out of memory, too many connections)
        "57",  # operator intervention: query canceled (statement timeout), admin shutdown,
        #        crash shutdown, cannot connect now
        "40",  # transaction rollback: serialization failure, deadlock
        "55",  # object not in prerequisite state: lock not available
        "58",  # system error (I/O)
        "XX",  # internal error
        "28",  # invalid authorization
        "3D",  # invalid catalog name (no such database)
        "42",  # syntax error or access rule violation (schema not migrated, no privilege)
        "25",  # invalid transaction state
        "26",  # invalid SQL statement name (a prepared statement lost by a pooler)
    }
)

#: Python exceptions that mean the connection, not the record.
RETRY_TYPES: tuple[type[BaseException], ...] = (
    OSError,  # ConnectionError, refused, reset, unreachable
    TimeoutError,
    asyncio.TimeoutError,
    asyncpg.InterfaceError,  # the pool is closing, the connection was closed
    asyncpg.exceptions.InternalClientError,
)


def _sqlstate(exc: BaseException) -> str | None:
    state = getattr(exc, "sqlstate", None)
    return state if isinstance(state, str) and len(state) == 5 else None


def classify(exc: BaseException) -> Disposition:
    """Whether a failed write of one record (or one batch) can succeed later.

    The SQLSTATE decides for a server error; a client-side
    :class:`~asyncpg.exceptions.DataError` (a parameter asyncpg cannot
    encode) carries ``22000``.  Anything else that is not a connection-level
    failure (:data:`RETRY_TYPES`) is refused.
    """
    state = _sqlstate(exc)
    if state is not None:
        return Disposition.RETRY if state[:2] in RETRY_CLASSES else Disposition.REFUSE
    if isinstance(exc, asyncpg.PostgresError):
        return Disposition.REFUSE  # a server error without a code: about this statement
    if isinstance(exc, RETRY_TYPES):
        return Disposition.RETRY
    return Disposition.REFUSE


def is_transient(exc: BaseException) -> bool:
    """``classify(exc) is Disposition.RETRY``."""
    return classify(exc) is Disposition.RETRY


def describe(exc: BaseException) -> str:
    """The database's message for a refusal: type, SQLSTATE, text (one line each)."""
    state = _sqlstate(exc)
    code = f" [{state}]" if state else ""
    return f"{type(exc).__name__}{code}: {exc}"


@dataclass(frozen=True, slots=True)
class Refusal(Generic[T]):
    """One record the database refused, with the database's message."""

    item: T
    error: str
    exc: BaseException


@dataclass(frozen=True, slots=True)
class SplitResult(Generic[T]):
    """What :func:`write_or_split` stored (rows reported by ``write``) and refused."""

    written: int
    refused: tuple[Refusal[T], ...]


async def write_or_split(items: Sequence[T], write: Callable[[Sequence[T]], Awaitable[int]]) -> SplitResult[T]:
    """Write ``items`` in one call; if the database refuses it, one call per item.

    ``write`` must be idempotent (a retried batch re-writes what one-by-one
    calls already stored) and must not run inside the caller's transaction
    (a refused statement aborts a transaction).

    :returns: the rows written and the items refused (each with its message).
    :raises Exception: a transient failure (:func:`classify`), of the batch or
        of any single write: retry the whole batch later.
    """
    try:
        return SplitResult(await write(items), ())
    except Exception as exc:  # classified right below
        if is_transient(exc):
            raise
        if len(items) == 1:
            return SplitResult(0, (Refusal(items[0], describe(exc), exc),))
    written, refused = 0, []
    for item in items:
        try:
            written += await write([item])
        except Exception as exc:  # classified right below
            if is_transient(exc):
                raise
            refused.append(Refusal(item, describe(exc), exc))
    return SplitResult(written, tuple(refused))
