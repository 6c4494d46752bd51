"""Benchmark: the stream agent's own CPU per event, without Faust's consumer.

Run ``.venv/bin/python bench/agent.py`` with the local stack up.  The
multiplied sample classroom (``--copies``, default 20 = 20,140 lines; as in
``bench/pipeline.py``) is handed to the stream agent of a real pipeline —
``Stream.one`` for each line, ``Stream.flush`` after every ``--batch`` lines
(default 200, the worker's ``WORKER_BATCH_MAX``) — with the worker's real
producer sending every output and changelog record to the real broker.  Each
line sits on its student's partition, as ``vexnudge produce`` keys it, so
every event is ingested and analysed in place.  Timed: this process's CPU
from the first line until the producer has flushed everything (the producer's
sender included), per line; also the pure cores alone on the same lines
(``streams.local.LineAnalyzer``), in the same process.

The worker's consumer side (the consumer thread, the fetcher, Faust's stream)
is left out on purpose: what remains is the code this project controls, so
the figure moves with our changes and much less with the machine than the
end-to-end benchmark does.  ``--root DIR`` measures the code of another
checkout instead (e.g. ``git worktree add /tmp/old REV``, plus the compiled
``tree_edit`` kernel copied into it), for an A/B in the same minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--copies", type=int, default=20, help="classroom copies (default 20)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=200, help="lines per flush (default 200)")
    parser.add_argument(
        "--root",
        type=Path,
        default=Path(__file__).resolve().parent.parent,
        help="the checkout whose code is measured (default: this one)",
    )
    return parser.parse_args()


ARGS = _arguments()
# Import the project from --root only (never from this file's checkout).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ARGS.root.resolve()))

from bench.common import classroom_lines, machine, stack_settings


class Message:
    """What the stream agent reads of a Faust event's message."""

    def __init__(self, topic: str, partition: int, offset: int, value: bytes) -> None:
        self.topic, self.partition, self.offset, self.value = topic, partition, offset, value
        self.key: bytes | None = None
        self.headers: list[tuple[str, bytes]] = []


class Event:
    def __init__(self, message: Message) -> None:
        self.message = message


async def agent_run(lines: list[bytes], batch: int) -> dict[str, Any]:
    """One pass of the lines through a fresh pipeline's stream agent."""
    from streams.agents.pipeline import build_pipeline
    from streams.agents.stream import Stream
    from streams.ingest import routing_key
    from topology.kafka_admin import ensure_topics
    from topology.partitioning import partition_for

    prefix = f"bench-agent-{uuid.uuid4().hex[:6]}."
    settings = stack_settings().model_copy(
        update={"app_id": prefix.rstrip("."), "topic_prefix": prefix, "clock_mode": "replay", "worker_web_port": 0}
    )
    await ensure_topics(settings)
    p = build_pipeline(settings, agents=False)
    await p.app.producer.start()
    try:
        stream = Stream(p)
        raw, offsets, events = settings.topic("vex.telemetry.raw"), {}, []
        for line in lines:
            partition = partition_for(routing_key(line) or "", settings.topic_partitions)
            offsets[partition] = offsets.get(partition, -1) + 1
            events.append(Event(Message(raw, partition, offsets[partition], line)))
        cpu, wall = time.process_time(), time.perf_counter()
        for start in range(0, len(events), batch):
            for event in events[start : start + batch]:
                await stream.one(event)
            await stream.flush()
            await asyncio.sleep(0)  # the worker yields while it waits for its next batch
        await p.app.producer.flush()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        outbox = getattr(stream.context, "outbox", None)
        return {
            "us": cpu / len(events) * 1e6,
            "rate": len(events) / wall,
            "batches": getattr(outbox, "sent_batches", None),
            "appended": getattr(outbox, "appended", None),
        }
    finally:
        await p.app.producer.stop()
        from vexnudge.replay import delete_topics

        await delete_topics(settings)


def cores_us(lines: list[bytes]) -> float:
    """The pure cores alone on the same lines: CPU µs per line."""
    from feedback.nudge import NudgeConfig
    from streams.config import EngineConfig
    from streams.local import LineAnalyzer, LocalAnalyzer
    from streams.scoring import TreeEditScorer

    settings = stack_settings()
    feed = LineAnalyzer(
        LocalAnalyzer(
            EngineConfig.from_settings(settings),
            TreeEditScorer.from_settings(settings),
            NudgeConfig.from_settings(settings),
        )
    ).feed
    started = time.process_time()
    for line in lines:
        feed(line)
    return (time.process_time() - started) / len(lines) * 1e6


def main() -> None:
    import uvloop

    lines = classroom_lines(ARGS.copies)
    print(
        f"# stream agent CPU: {len(lines):,} lines, flush every {ARGS.batch}, {ARGS.repeats} repeats, "
        f"code of {ARGS.root.resolve()}; {machine()}",
        flush=True,
    )
    runs = []
    for repeat in range(1, ARGS.repeats + 1):
        run = uvloop.run(agent_run(lines, ARGS.batch))
        run["cores"] = cores_us(lines)
        runs.append(run)
        extra = (
            f"  producer batches {run['batches']:,}  appended to waiting batches {run['appended']:,}"
            if run["batches"] is not None
            else ""
        )
        print(
            f"repeat {repeat}  agent {run['us']:.0f} µs/line CPU ({run['rate']:,.0f} lines/s)  "
            f"cores alone {run['cores']:.0f} µs/line{extra}",
            flush=True,
        )
    agent = statistics.median(r["us"] for r in runs)
    cores = statistics.median(r["cores"] for r in runs)
    print("\n| code | lines | agent CPU µs/line (median) | range | cores alone µs/line | agent beyond the cores |")
    print("|---|---:|---:|---:|---:|---:|")
    print(
        f"| {ARGS.root.resolve().name} | {len(lines):,} | {agent:.0f} | "
        f"{min(r['us'] for r in runs):.0f}–{max(r['us'] for r in runs):.0f} | {cores:.0f} | {agent - cores:.0f} |"
    )


if __name__ == "__main__":
    main()
