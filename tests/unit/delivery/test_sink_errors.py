"""Sinks: U+0000 made storable in every parameter, and failed writes classified."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg
import orjson
import pytest

from delivery.repo.codec import (
    REPLACEMENT,
    storable_json,
    storable_params,
    storable_text,
)
from delivery.repo.errors import Disposition, classify, describe, write_or_split

# --- storable text ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("plain", "plain"),
        ("", ""),
        ("a\x00b", "a\ufffdb"),
        ("\x00\x00", "\ufffd\ufffd"),
        ("tab\tand\x01 stay", "tab\tand\x01 stay"),  # only U+0000 is unstorable
        ("\ufffd already", "\ufffd already"),
    ],
)
def test_storable_text(text: str, stored: str) -> None:
    assert storable_text(text) == stored


def test_storable_text_keeps_none_and_the_same_object_when_clean() -> None:
    clean = "no nul here"
    assert storable_text(None) is None
    assert storable_text(clean) is clean  # the hot path allocates nothing


@pytest.mark.parametrize(
    ("value", "decoded"),
    [
        ({"a": "x\x00y"}, {"a": "x\ufffdy"}),
        ({"k\x00": ["\x00", 1]}, {"k\ufffd": ["\ufffd", 1]}),
        # a literal backslash followed by "u0000" is text, not the escape: kept
        ({"a": "\\u0000"}, {"a": "\\u0000"}),
        # an escaped backslash, then a real NUL
        ({"a": "\\\x00"}, {"a": "\\\ufffd"}),
        ({"a": "\\\\u0000"}, {"a": "\\\\u0000"}),
    ],
)
def test_storable_json_replaces_only_the_nul_escape(value: object, decoded: object) -> None:
    stored = storable_json(orjson.dumps(value))
    assert "\\u0000" not in stored.replace("\\\\", "")
    assert orjson.loads(stored) == decoded


def test_storable_json_of_clean_text_is_unchanged() -> None:
    data = orjson.dumps({"a": "b", "n": [1, 2]})
    assert storable_json(data) == data.decode()
    assert storable_json(data.decode()) == data.decode()


def test_storable_params_replaces_in_strings_and_text_arrays_only() -> None:
    params = ("a\x00", 5, None, ["x\x00", "y"], b"\x00", 1.5)
    assert storable_params(params) == ("a" + REPLACEMENT, 5, None, ["x" + REPLACEMENT, "y"], b"\x00", 1.5)


# --- the classifier ----------------------------------------------------------------------

E = asyncpg.exceptions

REFUSE, RETRY = Disposition.REFUSE, Disposition.RETRY

CASES: list[tuple[str, BaseException, Disposition]] = [
    # the record's fault: permanent
    ("NUL in text (22021)", E.CharacterNotInRepertoireError("invalid byte sequence"), REFUSE),
    ("\\u0000 in jsonb (22P05)", E.UntranslatableCharacterError("unsupported escape"), REFUSE),
    ("timestamp out of range (22008)", E.DatetimeFieldOverflowError("timestamp out of range"), REFUSE),
    ("numeric out of range (22003)", E.NumericValueOutOfRangeError("out of range"), REFUSE),
    ("client-side parameter encoding (22000)", E.DataError("invalid input for query argument"), REFUSE),
    ("check violation (23514)", E.CheckViolationError("violates check constraint"), REFUSE),
    ("not null violation (23502)", E.NotNullViolationError("null value"), REFUSE),
    ("unique violation (23505)", E.UniqueViolationError("duplicate key"), REFUSE),
    ("program limit (54000)", E.ProgramLimitExceededError("index row size"), REFUSE),
    ("raise in a trigger (P0001)", E.RaiseError("refused"), REFUSE),
    ("a value asyncpg cannot take", TypeError("expected str, got bytes"), REFUSE),
    ("an unexpected bug", RuntimeError("boom"), REFUSE),
    # not the record's fault: retry
    ("connection refused", ConnectionRefusedError(111, "refused"), RETRY),
    ("connection reset", ConnectionResetError(104, "reset"), RETRY),
    ("OSError", OSError("network unreachable"), RETRY),
    ("timeout", TimeoutError(), RETRY),
    ("asyncio timeout", TimeoutError(), RETRY),
    ("connection does not exist (08003)", E.ConnectionDoesNotExistError("closed"), RETRY),
    ("connection failure (08006)", E.ConnectionFailureError("lost"), RETRY),
    ("connection exception (08000)", E.PostgresConnectionError("lost"), RETRY),
    ("admin shutdown (57P01)", E.AdminShutdownError("terminating"), RETRY),
    ("crash shutdown (57P02)", E.CrashShutdownError("crash"), RETRY),
    ("cannot connect now (57P03)", E.CannotConnectNowError("starting up"), RETRY),
    ("statement timeout (57014)", E.QueryCanceledError("canceling statement"), RETRY),
    ("too many connections (53300)", E.TooManyConnectionsError("too many"), RETRY),
    ("disk full (53100)", E.DiskFullError("disk full"), RETRY),
    ("out of memory (53200)", E.OutOfMemoryError("oom"), RETRY),
    ("deadlock (40P01)", E.DeadlockDetectedError("deadlock"), RETRY),
    ("serialization failure (40001)", E.SerializationError("could not serialize"), RETRY),
    ("lock not available (55P03)", E.LockNotAvailableError("lock"), RETRY),
    ("schema not migrated (42P01)", E.UndefinedTableError("relation does not exist"), RETRY),
    ("no privilege (42501)", E.InsufficientPrivilegeError("permission denied"), RETRY),
    ("bad password (28P01)", E.InvalidPasswordError("password"), RETRY),
    ("no such database (3D000)", E.InvalidCatalogNameError("does not exist"), RETRY),
    ("pool closed", asyncpg.InterfaceError("pool is closed"), RETRY),
]


@pytest.mark.parametrize(("exc", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_classify(exc: BaseException, expected: Disposition) -> None:
    assert classify(exc) is expected


def test_describe_names_the_type_the_sqlstate_and_the_message() -> None:
    text = describe(E.DatetimeFieldOverflowError('timestamp out of range: "1e+300"'))
    assert text == 'DatetimeFieldOverflowError [22008]: timestamp out of range: "1e+300"'
    assert describe(RuntimeError("boom")) == "RuntimeError: boom"


# --- write_or_split ----------------------------------------------------------------------


class Sink:
    """Refuses items listed in ``bad``; fails transiently while ``down``."""

    def __init__(self, bad: set[int], down: int = 0) -> None:
        self.bad, self.down, self.calls, self.rows = bad, down, [], set()

    async def write(self, items: Sequence[int]) -> int:
        self.calls.append(list(items))
        if self.down:
            self.down -= 1
            raise ConnectionResetError(104, "reset")
        if self.bad & set(items):
            raise E.NumericValueOutOfRangeError("out of range")
        new = set(items) - self.rows
        self.rows |= new
        return len(new)


async def test_a_clean_batch_is_one_write() -> None:
    sink = Sink(set())
    result = await write_or_split([1, 2, 3], sink.write)
    assert (result.written, result.refused, sink.calls) == (3, (), [[1, 2, 3]])


async def test_a_refused_batch_is_split_and_only_the_bad_record_left_out() -> None:
    sink = Sink({2})
    result = await write_or_split([1, 2, 3], sink.write)
    assert result.written == 2 and sink.rows == {1, 3}
    assert [r.item for r in result.refused] == [2]
    assert "NumericValueOutOfRangeError [22003]" in result.refused[0].error
    assert sink.calls == [[1, 2, 3], [1], [2], [3]]


async def test_a_single_refused_record_is_not_written_twice() -> None:
    sink = Sink({7})
    result = await write_or_split([7], sink.write)
    assert [r.item for r in result.refused] == [7] and sink.calls == [[7]]


async def test_a_transient_failure_is_raised_for_the_caller_to_retry() -> None:
    sink = Sink(set(), down=1)
    with pytest.raises(ConnectionResetError):
        await write_or_split([1, 2], sink.write)
    assert sink.rows == set()


async def test_a_transient_failure_while_splitting_is_raised_too() -> None:
    sink = Sink({1})

    async def write(items: Sequence[int]) -> int:
        if len(sink.calls) == 2:  # the database goes away during the split
            sink.down = 1
        return await sink.write(items)

    with pytest.raises(ConnectionResetError):
        await write_or_split([1, 2], write)
