"""The consumer's hand-over of fetched records to the streams: inline when the
conductor's callback does not wait, raced against the flow's suspension only
when it does (as Faust races every record), and Faust's loop bookkeeping —
read offsets, gaps, commits every N acknowledgements — unchanged."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from types import SimpleNamespace
from typing import Any, NamedTuple

import faust
import mode
import pytest

from topology.seam.handover import YIELD_EVERY, RawSchema, deliver, drain


class TP(NamedTuple):
    topic: str
    partition: int


RAW = TP("vx.raw", 0)


def _record(offset: int, tp: TP = RAW, key: bytes | None = b"k") -> Any:
    return SimpleNamespace(
        topic=tp.topic, partition=tp.partition, offset=offset, key=key, value=b"v%d" % offset, headers=[], tp=tp
    )


async def _lose(task: Any) -> None:
    """A race the callback always loses (its task is cancelled, as wait_first does)."""
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def _win(task: Any) -> Any:
    return await task


async def test_a_callback_that_does_not_wait_runs_inline() -> None:
    seen, raced = [], []

    async def callback(message: Any) -> None:
        seen.append(message.offset)

    tasks = len(asyncio.all_tasks())
    await deliver(callback, _record(7), raced.append)
    assert seen == [7] and raced == []
    assert len(asyncio.all_tasks()) == tasks


async def test_a_callback_that_waits_finishes_in_the_race_with_what_it_awaited() -> None:
    loop = asyncio.get_running_loop()
    space, got = loop.create_future(), []

    async def callback(message: Any) -> None:
        got.append(await space)
        got.append(await asyncio.sleep(0, result="slept"))
        got.append(message.offset)

    loop.call_soon(space.set_result, "room")
    await deliver(callback, _record(3), _win)
    assert got == ["room", "slept", 3]


async def test_a_lost_race_cancels_the_waiting_callback() -> None:
    loop = asyncio.get_running_loop()
    events: list[str] = []

    async def callback(message: Any) -> None:
        try:
            await loop.create_future()  # a full buffer that never drains
        except asyncio.CancelledError:
            events.append("cancelled")
            raise
        events.append("delivered")

    await deliver(callback, _record(1), _lose)
    assert events == ["cancelled"]


@pytest.mark.parametrize("waits", [False, True])
async def test_an_error_of_the_callback_propagates(waits: bool) -> None:
    async def callback(message: Any) -> None:
        if waits:
            await asyncio.sleep(0)
        raise LookupError("no channel")

    with pytest.raises(LookupError, match="no channel"):
        await deliver(callback, _record(1), _win)


class _Consumer(mode.Service):
    """Faust's consumer as :func:`drain` sees it, fed fixed batches."""

    consumer_stopped_errors = (ConnectionError,)

    def __init__(
        self, batches: list[list[Any]], callback: Any, *, commit_every: int | None = None, acks: bool = True
    ) -> None:
        super().__init__()
        self.batches, self.callback = batches, callback
        self._read_offset: defaultdict[TP, int | None] = defaultdict(lambda: None)
        self._commit_every, self._n_acked, self.commits = commit_every, 0, 0
        self.gaps: list[tuple[TP, int, int]] = []
        self.suspend_flow = asyncio.Event()
        self.app = SimpleNamespace(topics=SimpleNamespace(acks_enabled_for=lambda topic: acks))
        self.transport = SimpleNamespace(app=SimpleNamespace(should_stop=False))

    async def getmany(self, timeout: float) -> Any:
        if not self.batches:
            self._stopped.set()
            return
        for record in self.batches.pop(0):
            yield TP(record.topic, record.partition), record

    async def _add_gap(self, tp: TP, start: int, end: int) -> None:
        self.gaps.append((tp, start, end))

    async def commit(self) -> None:
        self.commits += 1


async def _drained(consumer: _Consumer) -> None:
    fetcher = mode.Service()
    await asyncio.wait_for(drain(consumer, fetcher), 5)


async def test_drain_hands_records_over_in_order_and_tracks_read_offsets() -> None:
    seen: list[int] = []

    async def callback(message: Any) -> None:
        seen.append(message.offset)

    other = TP("vx.clock", 2)
    consumer = _Consumer([[_record(0), _record(1), _record(0, other)], [_record(2)]], callback)
    await _drained(consumer)
    assert seen == [0, 1, 0, 2]
    assert dict(consumer._read_offset) == {RAW: 2, other: 0}


async def test_drain_drops_records_below_the_read_offset_and_notes_gaps() -> None:
    seen: list[int] = []

    async def callback(message: Any) -> None:
        seen.append(message.offset)

    consumer = _Consumer([[_record(4), _record(5), _record(3), _record(5), _record(9)]], callback)
    await _drained(consumer)
    assert seen == [4, 5, 5, 9]  # 3 was read before; a re-read of the last offset goes through, as in Faust
    assert consumer.gaps == [(RAW, 6, 9)]

    quiet = _Consumer([[_record(4), _record(9)]], callback, acks=False)
    await _drained(quiet)
    assert quiet.gaps == []


async def test_drain_commits_every_n_acknowledgements() -> None:
    consumer: _Consumer

    async def callback(message: Any) -> None:
        consumer._n_acked += 1

    consumer = _Consumer([[_record(i) for i in range(7)]], callback, commit_every=3)
    await _drained(consumer)
    assert consumer.commits == 2 and consumer._n_acked == 1


async def test_drain_gives_up_a_waiting_hand_over_when_the_flow_is_suspended() -> None:
    loop = asyncio.get_running_loop()
    blocked, seen = loop.create_future(), []

    async def callback(message: Any) -> None:
        if message.offset == 1:
            await blocked  # the stream buffer is full
        seen.append(message.offset)

    consumer = _Consumer([[_record(0), _record(1), _record(2)]], callback)
    loop.call_later(0.05, consumer.suspend_flow.set)
    await _drained(consumer)
    assert seen == [0, 2] and blocked.cancelled()
    assert consumer._read_offset[RAW] == 2


async def test_drain_lets_other_tasks_run_while_handing_over_a_long_batch() -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    async def callback(message: Any) -> None:
        pass

    task = asyncio.ensure_future(ticker())
    await asyncio.sleep(0)
    before = ticks
    await _drained(_Consumer([[_record(i) for i in range(5 * YIELD_EVERY)]], callback))
    task.cancel()
    assert ticks - before >= 4


async def test_raw_schema_builds_events_from_the_record_bytes() -> None:
    app = faust.App("handover-test", broker="memory://")
    decode = RawSchema().compile(app)
    keyed = _record(5, key=b"student-1")
    event = await decode(keyed)
    assert (event.key, event.value, event.message) == (b"student-1", b"v5", keyed)
    assert (await decode(_record(6, key=None))).key is None
    plain = faust.Schema(key_serializer="raw", value_serializer="raw").compile(app)
    assert (await plain(keyed)).value == event.value
