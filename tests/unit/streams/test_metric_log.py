"""The chunked metric log: records survive a round trip across chunks, a
repeated append (a batch processed again after a crash) replaces instead of
duplicating, chunks past the kept window are deleted, and a chunk stored as one
JSON array (the older form) is read and extended correctly."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from streams.programs import CHUNK, DictMetricLog


def _record(i: int) -> list[Any]:
    return [1_700_000_000.0 + i, "blockMoved", "VR Maze", {"walls": [i, "a\nb"]} if i % 3 else None, i % 2, None]


def _filled(n: int, keep: int = 400) -> DictMetricLog:
    log = DictMetricLog(keep)
    for i in range(n):
        log.append("s1", i, _record(i))
    return log


@pytest.mark.parametrize("n", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5])
def test_round_trip_across_chunks(n: int) -> None:
    log = _filled(n)
    assert log.load("s1", n, 400) == [_record(i) for i in range(n)]
    assert log.load("s1", n, 7) == [_record(i) for i in range(max(0, n - 7), n)]


@pytest.mark.parametrize("replayed_from", [0, 5, CHUNK - 1, CHUNK + 2])
def test_a_repeated_append_replaces(replayed_from: int) -> None:
    n = CHUNK + 10
    log = _filled(n)
    for i in range(replayed_from, n):  # the same records appended again, as after a crash
        log.append("s1", i, _record(i))
    assert log.load("s1", n, 400) == [_record(i) for i in range(n)]
    log.append("s1", 3, ["replaced"])
    assert log.load("s1", 4, 400) == [_record(0), _record(1), _record(2), ["replaced"]]


def test_chunks_outside_the_window_are_dropped() -> None:
    keep = 2 * CHUNK
    log = _filled(5 * CHUNK, keep)
    assert sorted(int(key.rsplit("\x1f", 1)[1]) for key in log.data) == [3, 4]
    assert log.load("s1", 5 * CHUNK, keep) == [_record(i) for i in range(3 * CHUNK, 5 * CHUNK)]
    log.drop("s1", 5 * CHUNK)
    assert log.data == {}


def test_an_older_array_chunk_is_read_and_extended() -> None:
    log = DictMetricLog()
    log.data["s1\x1f0"] = orjson.dumps([_record(0), _record(1), _record(2)])
    assert log.load("s1", 3, 400) == [_record(0), _record(1), _record(2)]
    log.append("s1", 3, _record(3))
    assert log.load("s1", 4, 400) == [_record(i) for i in range(4)]
    log.data["s1\x1f0"] = orjson.dumps([_record(0), _record(1), _record(2)])
    log.append("s1", 1, ["again"])  # a repeat over an array chunk replaces too
    assert log.load("s1", 2, 400) == [_record(0), ["again"]]


def test_a_chunk_is_json_lines() -> None:
    log = _filled(2)
    assert log.data["s1\x1f0"] == orjson.dumps(_record(0)) + b"\n" + orjson.dumps(_record(1)) + b"\n"
