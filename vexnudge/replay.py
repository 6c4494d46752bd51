"""Replaying a recorded file through the real broker into a fresh app.

Fresh topics (a unique prefix) and a fresh consumer group, a worker in
event-time mode, the file produced as fast as possible, then — once every
record is consumed — a final clock tick at the file's horizon on every
partition, and the outputs read back from the topics.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer

from streams.ingest import decode_line
from streams.summary import Observed
from topology import topics as T
from topology.kafka_admin import delete_topics_where, ensure_topics, read_to_end, topic_names, wait_consumed
from topology.schemas import (
    ClockTick,
    EpisodeClosed,
    NormalizedEvent,
    PauseDetected,
    decode,
    encode,
)
from topology.settings import Settings
from vexnudge.producer import ProduceStats, produce_lines
from vexnudge.workerproc import WorkerProcess

OUTPUT_TOPICS: tuple[T.TopicSpec, ...] = (T.EVENTS, T.RUNS, T.TRIGGERS, T.EPISODES, T.DEADLETTER)

Report = Callable[[str, int, int], None]


@dataclass
class ReplayResult:
    observed: Observed = field(default_factory=Observed)
    records: dict[str, list[bytes]] = field(default_factory=dict)
    produce: ProduceStats = field(default_factory=ProduceStats)
    blank_lines: int = 0
    horizon: float | None = None
    wall_s: float = 0.0

    def input_report(self, lines: int) -> dict[str, Any]:
        rejected = Counter(d.reason.value for d in self.observed.dead if d.stage == "ingest")
        return {
            "lines": lines,
            "blank_lines": self.blank_lines,
            "accepted": len(self.observed.events),
            "rejected": dict(sorted(rejected.items())),
        }


def horizon_of(lines: list[bytes]) -> float | None:
    """The latest accepted event time of a file (the inactive horizon)."""
    times = [out.ts for out in map(decode_line, lines) if isinstance(out, NormalizedEvent)]
    return max(times) if times else None


def fresh_settings(settings: Settings, name: str | None = None) -> Settings:
    """Settings for an isolated replay: unique app id and topic prefix."""
    name = name or f"replay-{uuid.uuid4().hex[:8]}"
    return settings.model_copy(update={"app_id": name, "topic_prefix": f"{name}."})


async def send_final_ticks(settings: Settings, now: float) -> None:
    """A final tick at ``now`` on every partition of the clock topic."""
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers, enable_idempotence=True)
    await producer.start()
    try:
        value = encode(ClockTick(now=now, final=True, source="replay"))
        for partition in range(settings.topic_partitions):
            await producer.send(settings.topic(T.CLOCK.name), value=value, partition=partition)
        await producer.flush()
    finally:
        await producer.stop()


def _parse(spec: T.TopicSpec, value: bytes) -> object:
    kinds = spec.records
    if len(kinds) == 1:
        return decode(kinds[0], value)
    return decode(EpisodeClosed if b'"kind":"episode"' in value else PauseDetected, value)


async def collect_outputs(settings: Settings, result: ReplayResult) -> None:
    """Read every output topic to its end into ``result``."""
    for spec in OUTPUT_TOPICS:
        values = [r.value or b"" async for r in read_to_end(settings, [settings.topic(spec.name)])]
        result.records[spec.name] = values
        for value in values:
            result.observed.add(_parse(spec, value))


async def delete_topics(settings: Settings) -> None:
    """Remove a replay's topics (contract topics and the app's changelogs)."""
    own = set(topic_names(settings))
    await delete_topics_where(settings, lambda name: name in own or name.startswith(settings.app_id + "-"))


async def replay(
    settings: Settings,
    lines: list[bytes],
    *,
    report: Report | None = None,
    timeout_s: float = 600.0,
    worker: WorkerProcess | None = None,
    numbers: Sequence[int] | None = None,
) -> ReplayResult:
    """Run the whole replay; ``settings`` should already be fresh (unique names).

    :param numbers: each line's number in its file, when ``lines`` are sent in
        another order (a reproduced arrival disorder).
    """
    result, started = ReplayResult(), time.perf_counter()
    result.blank_lines = sum(1 for line in lines if not line.strip())
    result.horizon = horizon_of(lines)
    await ensure_topics(settings)
    worker = (
        worker
        or WorkerProcess(
            settings.app_id, settings.topic_prefix, clock="replay", extra_args=["--commit-interval", "0.2"]
        ).start()
    )
    try:
        step = (lambda name: lambda done, total: report(name, done, total)) if report else (lambda _n: None)
        result.produce = await produce_lines(
            settings,
            lines,
            on_progress=lambda s: report and report("produce", s.lines, len(lines)),
            numbers=numbers,
        )
        for spec in T.ANALYSIS_INPUTS:
            await _wait(settings, spec, worker, timeout_s, step(f"consume {spec.name}"))
        if result.horizon is not None:
            await send_final_ticks(settings, result.horizon)
            await _wait(settings, T.CLOCK, worker, timeout_s, step("final tick"))
        await collect_outputs(settings, result)
    finally:
        worker.stop()
    result.wall_s = time.perf_counter() - started
    return result


async def _wait(settings: Settings, spec: T.TopicSpec, worker: WorkerProcess, timeout_s: float, progress: Any) -> None:
    task = asyncio.ensure_future(
        wait_consumed(settings, settings.app_id, settings.topic(spec.name), timeout_s, progress)
    )
    while not task.done():
        if not worker.alive:
            task.cancel()
            raise RuntimeError(
                f"the worker exited (code {worker.process and worker.process.returncode}):\n{worker.log_tail()}"
            )
        await asyncio.sleep(0.2)
    await task


def write_outputs(result: ReplayResult, out_dir: Path) -> dict[str, Path]:
    """The observed records as JSON lines, one file per topic."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, values in result.records.items():
        path = out_dir / f"{name.removeprefix('vex.')}.jsonl"
        path.write_bytes(b"".join(v + b"\n" for v in values))
        files[name] = path
    return files
