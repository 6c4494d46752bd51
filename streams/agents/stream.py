"""The stream agent: ingest and analysis in one pass over each raw line.

One agent (one actor, so a student's records are handled strictly one at a
time) consumes the co-partitioned ``vex.telemetry.raw``, ``vex.events.rekeyed``,
``vex.clock`` and ``vex.chat.requests``:

* a raw line is validated (:class:`~streams.agents.ingest.Ingest`); an
  accepted event is published on ``vex.events`` for the event store and
  analysts, and then

  - if the line sits on its student's partition (producers key lines by the
    student, as ``vexnudge produce`` does), it is analysed right here: its
    state lives on this partition;
  - otherwise it is published on ``vex.events.rekeyed`` under the student's
    key and analysed when that record comes back on the student's partition;

* a re-keyed event, a clock tick or a question goes to its
  :class:`~streams.agents.analysis.Analysis` handler.

Each event thus crosses Faust once, not twice (ingest, then analysis of what
ingest wrote): the per-record cost of a stream is most of a worker's CPU
(docs/performance.md, "Pipeline").  Outputs and table writes of both stages
go to one outbox per batch and reach the producer as whole batches, the table
writes after the batch's outputs (:meth:`Stream.flush`, one commit in numbered
steps).  A failure on one record
dead-letters it with the stage that failed; the agent goes on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Awaitable
from time import thread_time
from typing import Any

from streams.agents.analysis import Analysis
from streams.agents.batching import BatchContext
from streams.agents.emit import count_failed_delivery, dead_letter_failure, publish
from streams.agents.ingest import Ingest, source_of
from streams.agents.pipeline import Pipeline
from topology import topics as T
from topology.schemas import SourceRef
from topology.seam.handover import RawSchema
from topology.seam.outbox import Outbox


class Stream:
    """Dispatch of one record to the stage that handles its topic."""

    def __init__(self, p: Pipeline, *, analysis: bool = True) -> None:
        self.p = p
        self.analysing = analysis
        self.context = BatchContext(Outbox(p.app.producer, on_failed=count_failed_delivery(p)))
        self.ingest = Ingest(p, self.context)
        self.analysis = Analysis(p, self.context)
        self.names = {p.settings.topic(s.name): s.name for s in (T.RAW, T.REKEYED, T.CLOCK, T.CHAT_REQUESTS)}
        self.counted = {name: p.metrics.records_in.labels(name) for name in self.names.values()}
        self.handlers = {
            T.REKEYED.name: self.analysis.on_event,
            T.CLOCK.name: self.analysis.on_tick,
            T.CHAT_REQUESTS.name: self.analysis.on_chat,
        }

    async def on_raw(self, value: bytes, source: SourceRef) -> None:
        try:
            event = await self.ingest.on_raw(value, source)
        except Exception as exc:  # noqa: BLE001 - the stage edge: dead-letter and go on
            self.ingest.forget()  # re-read the ids from the table for the next lines
            await dead_letter_failure(self.p, "ingest", value, source, exc, outbox=self.context.outbox)
            return
        if event is None or not self.analysing:
            return
        if self.p.partition_of(event.student_key) != source.partition:
            await publish(self.p, event, event.student_key, T.REKEYED, outbox=self.context.outbox)
            return
        await self.analysed(self.analysis.analyse(event, source.partition), value, source, event.student_key)

    async def analysed(self, step: Awaitable[None], value: bytes, source: SourceRef, key: str | bytes | None) -> None:
        """Run one analysis step; a failure restores the student's state and
        dead-letters the record (the key is decoded only then)."""
        try:
            await step
        except Exception as exc:  # noqa: BLE001 - the stage edge: dead-letter and go on
            self.analysis.restore_checkpoint()
            text = key.decode(errors="replace") if isinstance(key, bytes) else key
            await dead_letter_failure(self.p, "analysis", value, source, exc, text, outbox=self.context.outbox)

    async def one(self, event: Any) -> None:
        message = event.message
        name = self.names[message.topic]
        self.counted[name].inc()
        source = source_of(message)
        value = message.value or b""
        self.context.enter(event)
        self.analysis.store.clear_checkpoint()
        if name == T.RAW.name:
            await self.on_raw(value, source)
            return
        await self.analysed(self.handlers[name](value, source), value, source, message.key or None)

    async def flush(self) -> None:
        """Send the batch's outputs, then write its table changes.

        Every record of the batch went to the batch's outbox
        (:class:`~topology.seam.outbox.Outbox`: aiokafka batch builders, one
        per topic partition); :meth:`StudentStore.commit
        <streams.agents.store.StudentStore.commit>` enqueues them on the
        producer, then the table changes in numbered steps (ingest's id
        windows go with the new programs and metric chunks, before the states
        that refer to them), each enqueued before the next begins.  A crash
        that stops the producer midway therefore never leaves a state whose
        outputs or programs were lost (at worst an unreferenced program stays).
        """
        await self.analysis.store.commit(ids=self.ingest, on_outputs=self.count_outputs)

    def count_outputs(self, counts: Counter[str]) -> None:
        """Count the batch's outputs per topic (``vexnudge_records_out_total``)."""
        out = self.p.metrics.records_out
        for name, count in counts.items():
            out.labels(name).inc(count)

    def forget(self) -> None:
        """Drop the cached state (partitions moved)."""
        self.ingest.forget()
        self.analysis.forget()


def register(p: Pipeline, *, analysis: bool = True) -> None:
    """The stream agent; ``analysis=False`` runs ingest alone (the ingest benchmark)."""
    stream = Stream(p, analysis=analysis)
    p.extras["stream"] = stream

    # mode's stub for a signal handler accepts no coroutine function mypy can match
    @p.app.on_partitions_assigned.connect  # type: ignore[arg-type]
    async def _reassigned(app: object, assigned: object = None, **kwargs: object) -> None:
        stream.forget()

    channel = p.app.topic(*stream.names, schema=RawSchema())

    @p.app.agent(channel, name="stream")
    async def stream_agent(records):  # type: ignore[no-untyped-def]
        await run_batches(
            records.take_events(p.settings.worker_batch_max, within=p.settings.worker_batch_within_ms / 1000), stream
        )


async def run_batches(batches: AsyncIterator[list[Any]], stream: Stream) -> None:
    """Each batch: every record handled (its outputs sent), then the batch's state written.

    The thread CPU time from a batch's first record to the end of its flush is
    counted (``vexnudge_stream_agent_cpu_seconds_total``, with the records in
    ``vexnudge_stream_agent_records_total``), so the worker's CPU can be split
    into the agent's own work and everything else: Faust's consumer thread and
    stream, the producer's sender, commits.  It also includes whatever the loop
    ran while the agent waited for the producer, which happens only when a
    partition's batch there is full; the split then errs towards the agent.
    """
    cpu, handled = stream.p.metrics.stream_agent_cpu, stream.p.metrics.stream_agent_records
    async for events in batches:
        started = thread_time()
        for event in events:
            await stream.one(event)
        await stream.flush()
        cpu.inc(thread_time() - started)
        handled.inc(len(events))
