"""The worker's event-store loop survives rebalances and failures (a task that
raised would crash the whole worker)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from aiokafka.errors import CommitFailedError

from streams.agents.eventstore import run_event_store
from topology.schemas.base import encode
from topology.schemas.events import NormalizedEvent


def _event(n: int) -> NormalizedEvent:
    return NormalizedEvent(
        event_id=str(n),
        envelope_id_int=n,
        student_key="s",
        student_id="S",
        session_id="x",
        event_type="menuOpen",
        ts=float(n),
        timestamp="2026-06-15T12:00:00Z",
        workspace_status="absent",
    )


class FakeConsumer:
    """Gives the scripted batches, then cancels the loop; the first commit is refused."""

    def __init__(self, batches: list[list[bytes]], failures: list[BaseException]) -> None:
        self.batches, self.failures, self.commits = batches, failures, 0

    async def getmany(self, timeout_ms: int) -> dict[int, list[object]]:
        if not self.batches:
            raise asyncio.CancelledError
        values = self.batches.pop(0)
        return {0: [SimpleNamespace(value=v, partition=0, offset=i) for i, v in enumerate(values)]}

    async def commit(self) -> None:
        if self.failures:
            raise self.failures.pop(0)
        self.commits += 1


def test_a_refused_commit_or_a_foreign_record_does_not_stop_the_store(monkeypatch) -> None:
    stored: list[str] = []

    async def store(events: list[NormalizedEvent]) -> None:
        stored.extend(e.event_id for e in events)

    consumer = FakeConsumer([[encode(_event(1)), b"not json"], [encode(_event(2))]], [CommitFailedError("rebalanced")])
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(run_event_store(consumer, store))
    assert stored == ["1", "2"]  # the foreign record skipped, the batch after the refusal stored
    assert consumer.commits == 1


def test_a_failing_store_is_retried_not_raised(monkeypatch) -> None:
    calls: list[int] = []

    async def store(events: list[NormalizedEvent]) -> None:
        calls.append(len(events))
        if len(calls) == 1:
            raise RuntimeError("database went away")

    monkeypatch.setattr(asyncio, "sleep", _no_sleep)
    consumer = FakeConsumer([[encode(_event(1))], [encode(_event(1))]], [])
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(run_event_store(consumer, store))
    assert calls == [1, 1] and consumer.commits == 1


async def _no_sleep(delay: float) -> None:
    return None
