"""After an assignment, no stream record may reach Faust's consumer before the
seek to the committed offsets (records read then are dropped when read again
after the seek), and aiokafka must never read an empty set of active
partitions as "every partition" (it would return, and move past, the records
of paused partitions, which Faust then drops)."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka.consumer.fetcher import Fetcher, FetchResult
from faust.transport.drivers import aiokafka as driver
from faust.types import TP

from topology.seam.transport import ActiveView, Consumer, SeekGate

RAW, CLOCK, LOG = TP("vx.raw", 0), TP("vx.clock", 0), TP("vx-students-changelog", 0)
COMMITTED = {RAW: 190, CLOCK: 7, LOG: None}


def _consumer() -> Any:
    """Faust's consumer bookkeeping, with a seek that records what was active."""
    consumer = object.__new__(Consumer)
    consumer.app = SimpleNamespace(tables=SimpleNamespace(changelog_topics={LOG.topic}))
    consumer._active_partitions = {RAW, CLOCK, LOG}
    consumer._paused_partitions = set()
    consumer._read_offset = defaultdict(lambda: None, {RAW: 213})
    consumer._committed_offset = defaultdict(lambda: None)
    consumer.active_during_seek = None

    async def seek_to_committed() -> dict[TP, int | None]:
        consumer.active_during_seek = set(consumer._active_partitions)
        return COMMITTED

    consumer.seek_to_committed = seek_to_committed
    return consumer


def test_stream_partitions_flow_only_after_the_seek_that_follows_an_assignment(monkeypatch) -> None:
    async def assigned(self: Any, tps: Any, generation_id: int = 0) -> None:
        return None

    monkeypatch.setattr(driver.Consumer, "on_partitions_assigned", assigned)
    consumer = _consumer()
    asyncio.run(consumer.on_partitions_assigned({RAW, CLOCK, LOG}))
    # Faust's recovery: pause everything, read the changelogs, pause them again...
    consumer.pause_partitions({RAW, CLOCK, LOG})
    consumer.resume_partitions({LOG})
    assert consumer._active_partitions == {LOG}  # changelogs flow at once
    consumer.pause_partitions({LOG})
    # ...then resume the stream partitions and only then seek them.
    consumer.resume_partitions({RAW, CLOCK})
    assert consumer._active_partitions == set()  # held
    asyncio.run(consumer.perform_seek())
    assert consumer.active_during_seek == set()  # nothing read from before the seek
    assert consumer._active_partitions == {RAW, CLOCK}
    assert consumer._paused_partitions == {LOG}  # the changelog stays paused
    assert consumer._read_offset[RAW] == 190  # a re-read from the commit is not dropped
    # Outside a rebalance, resuming is immediate.
    consumer.pause_partitions({RAW})
    consumer.resume_partitions({RAW})
    assert RAW in consumer._active_partitions


def test_a_failed_seek_still_lets_the_held_partitions_flow() -> None:
    consumer = _consumer()
    consumer.seek_gate.assigned()
    consumer.pause_partitions({RAW, CLOCK, LOG})
    consumer.resume_partitions({RAW})

    async def broken() -> dict[TP, int | None]:
        raise RuntimeError("broker went away")

    consumer.seek_to_committed = broken
    with pytest.raises(RuntimeError):
        asyncio.run(consumer.perform_seek())
    assert RAW in consumer._active_partitions  # the commit-gap healer covers the rest


def test_gate_holds_stream_partitions_until_a_seek_releases_them() -> None:
    gate = SeekGate()
    is_log = lambda tp: tp == LOG  # noqa: E731
    assert gate.resume({RAW}, is_log) == {RAW}  # before any assignment: nothing owed
    gate.assigned()
    assert gate.sought() == set()  # a seek before the stream partitions were resumed...
    assert gate.resume({RAW, CLOCK, LOG}, is_log) == {LOG}  # ...does not pay the debt
    gate.revoked({CLOCK})
    assert gate.sought() == {RAW}
    assert gate.resume({CLOCK}, is_log) == {CLOCK}  # paid
    gate.assigned()
    gate.resume({RAW}, is_log)
    gate.assigned()  # a new assignment before the seek: Faust resumes them again
    assert gate.sought() == set()


class _Records:
    """aiokafka's partition records: an iterator that knows the next fetch offset."""

    def __init__(self, offsets: list[int]) -> None:
        self.items = iter(offsets)
        self.next_fetch_offset = offsets[0]

    def __iter__(self) -> _Records:
        return self

    def __next__(self) -> int:
        value = next(self.items)
        self.next_fetch_offset = value + 1
        return value


def _fetcher(tp: TP) -> Any:
    """aiokafka's fetcher state holding one fetched, not yet returned batch for ``tp``."""
    state = SimpleNamespace(paused=False, position=190, consumed_to=lambda offset: None)
    assignment = SimpleNamespace(active=True, state_value=lambda _: state)
    result = FetchResult(tp, assignment=assignment, partition_records=_Records([190, 191]), backoff=0)
    return SimpleNamespace(
        _subscriptions=SimpleNamespace(reassignment_in_progress=False, is_assigned=lambda _: True),
        _records={tp: result},
        _notify=lambda _: None,
        _wait_consume_future=None,
    )


def _fetched(partitions: Any) -> dict[Any, list[int]]:
    return asyncio.run(Fetcher.fetched_records(_fetcher(RAW), partitions, timeout=0))


def test_aiokafka_reads_an_empty_filter_as_every_partition() -> None:
    assert _fetched(set()) == {RAW: [190, 191]}  # why the view exists


def test_active_view_keeps_the_filter_on_when_every_partition_is_paused() -> None:
    active: set[TP] = set()
    view = ActiveView(active)
    fetcher = _fetcher(RAW)
    assert asyncio.run(Fetcher.fetched_records(fetcher, view, timeout=0)) == {}
    assert RAW in fetcher._records  # still buffered, returned once the partition flows
    active.add(RAW)  # the view reads the consumer's set live
    assert asyncio.run(Fetcher.fetched_records(fetcher, view, timeout=0)) == {RAW: [190, 191]}


def test_the_consumer_thread_hands_aiokafka_the_view() -> None:
    """The driver's fetch, as our consumer thread makes it, passes the view."""
    from contextlib import nullcontext

    from topology.seam.transport import ConsumerThread

    seen: list[Any] = []

    async def fetched_records(partitions: Any, timeout: float, max_records: int | None) -> dict[Any, Any]:
        seen.append(partitions)
        return {}

    fetcher = SimpleNamespace(
        _closed=False, fetched_records=fetched_records, _subscriptions=SimpleNamespace(fetch_context=nullcontext)
    )
    thread = object.__new__(ConsumerThread)
    thread.consumer = SimpleNamespace(flow_active=True)
    active: set[TP] = set()
    asyncio.run(thread._fetch_records(SimpleNamespace(_closed=False, _fetcher=fetcher), active, timeout=0.0))
    assert isinstance(seen[0], ActiveView) and bool(seen[0]) and RAW not in seen[0]
    active.add(RAW)
    assert RAW in seen[0]
