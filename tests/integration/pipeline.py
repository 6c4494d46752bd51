"""Helpers for tests that run the pipeline on the real broker."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TypeVar

from topology.kafka_admin import ensure_topics, read_to_end
from topology.settings import Settings
from vexnudge.replay import delete_topics
from vexnudge.workerproc import WorkerProcess

R = TypeVar("R")


def isolated(settings: Settings, prefix: str, **overrides: object) -> Settings:
    """Settings with this test's own topics and consumer group."""
    name = prefix.rstrip(".")
    return settings.model_copy(update={"app_id": name, "topic_prefix": prefix, **overrides})


def start_worker(settings: Settings, clock: str = "replay", *extra: str, datadir: Path | None = None) -> WorkerProcess:
    """A worker subprocess on the test's topics (fast commits); a fresh data
    directory unless ``datadir`` is given (a restart that keeps its RocksDB files)."""
    return WorkerProcess(
        settings.app_id,
        settings.topic_prefix,
        clock=clock,
        datadir=datadir,
        extra_args=["--commit-interval", "0.2", "--session-timeout", "10", *extra],
    ).start()


async def read_values(settings: Settings, logical: Iterable[str]) -> dict[str, list[tuple[bytes | None, bytes]]]:
    """(key, value) of every record of the given topics, in partition order."""
    out: dict[str, list[tuple[bytes | None, bytes]]] = {}
    for name in logical:
        out[name] = [(r.key, r.value or b"") async for r in read_to_end(settings, [settings.topic(name)])]
    return out


def on_own_topics(settings: Settings, scenario: Callable[[], Awaitable[R]]) -> R:
    """Create the test's topics, run ``scenario``, then delete the topics whatever happened."""

    async def whole() -> R:
        await ensure_topics(settings)
        return await scenario()

    try:
        return asyncio.run(whole())
    finally:
        asyncio.run(delete_topics(settings))


def run(coro):  # type: ignore[no-untyped-def]
    """Run a coroutine from a sync test."""
    return asyncio.run(coro)


def nudge_oracle(settings: Settings, lines: list[bytes]) -> dict[str, tuple[str, str | None]]:
    """trigger id → (status, reason) as the pure engine and nudge policy decide them in
    process for ``lines`` (replay mode, the worker's partitions): what a worker must store."""
    from feedback.nudge import NudgeConfig
    from streams.config import EngineConfig
    from streams.local import analyze_lines
    from streams.scoring import TreeEditScorer

    run = analyze_lines(
        lines,
        EngineConfig.from_settings(settings),
        TreeEditScorer(),
        NudgeConfig.from_settings(settings),
        partitions=settings.topic_partitions,
    )
    return {
        r.trigger.trigger_id: ("acted", None) if r.decision == "act" else ("suppressed", r.suppress_reason)
        for r in run.observed.requests
        if r.trigger is not None
    }
