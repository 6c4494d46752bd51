"""Raw lines that do not sit on their student's partition: ingest re-keys them
through ``vex.events.rekeyed`` and the analysis gives the golden answer anyway."""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaProducer

from streams.ingest import decode_line, routing_key
from streams.local import read_lines
from tests.datafiles import SAMPLE_CLASSROOM, golden_for
from tests.integration.pipeline import isolated, on_own_topics, read_values, start_worker
from tests.integration.test_resilience import finish, golden_ids
from topology import topics as T
from topology.partitioning import partition_for
from topology.schemas import NormalizedEvent, decode
from vexnudge.producer import LINE_HEADER
from vexnudge.replay import ReplayResult

pytestmark = pytest.mark.integration


async def produce_all_to_partition(settings, lines: list[bytes], partition: int) -> None:  # type: ignore[no-untyped-def]
    """Every line on one raw partition, without a key (a producer that does not key)."""
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers, linger_ms=5)
    await producer.start()
    try:
        for number, line in enumerate(lines, start=1):
            await producer.send(
                settings.topic(T.RAW.name), line, partition=partition, headers=[(LINE_HEADER, str(number).encode())]
            )
        await producer.flush()
    finally:
        await producer.stop()


def test_lines_off_their_students_partition_are_rekeyed_and_give_the_golden_output(stack, unique_prefix) -> None:
    settings = isolated(stack, unique_prefix)
    lines = read_lines(SAMPLE_CLASSROOM.read_bytes())
    students = {key for key in map(routing_key, lines) if key}
    homes = {partition_for(key, settings.topic_partitions) for key in students}
    assert 0 in homes and len(homes) > 1  # some students analysed where read, the others re-keyed
    accepted = [decode_line(line) for line in lines]
    assert all(isinstance(e, NormalizedEvent) for e in accepted)  # the sample has no bad line
    moved = {e.event_id for e in accepted if partition_for(e.student_key, settings.topic_partitions) != 0}

    async def scenario() -> tuple[ReplayResult, set[str], set[str]]:
        worker = start_worker(settings)
        try:
            await produce_all_to_partition(settings, lines, 0)
            result = await finish(settings, lines)
        finally:
            worker.stop()
        values = await read_values(settings, [T.REKEYED.name, T.EVENTS.name])
        ids = {name: {decode(NormalizedEvent, v).event_id for _, v in records} for name, records in values.items()}
        return result, ids[T.REKEYED.name], ids[T.EVENTS.name]

    result, rekeyed, events = on_own_topics(settings, scenario)
    assert {t.trigger_id for t in result.observed.triggers} == golden_ids()
    golden = golden_for(SAMPLE_CLASSROOM)
    runs = {(r.session_id, r.run_index): r.edit_distance for r in result.observed.runs}
    assert runs == {(s["session_id"], r["index"]): r["edit_distance"] for s in golden["sessions"] for r in s["runs"]}
    assert rekeyed == moved  # exactly the lines of students homed on another partition
    assert events == {e.event_id for e in accepted}  # every event on the public topic, once re-keyed or not
