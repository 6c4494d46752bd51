"""The stream agent's pass over raw lines, with a recording producer and tables:
where each event is analysed, and that a batch's state is written after all of
its outputs were sent, in an order of which any prefix is consistent."""

from __future__ import annotations

import asyncio

import pytest

from streams.agents.pipeline import Pipeline
from streams.agents.stream import Stream, run_batches
from streams.config import EngineConfig
from streams.ingest import routing_key
from streams.local import read_lines
from streams.scoring import TreeEditScorer
from tests.datafiles import SAMPLE_CLASSROOM
from tests.fakes.producer import RecordingProducer
from topology import topics as T
from topology.kafka_admin import TABLES
from topology.metrics import WorkerMetrics
from topology.partitioning import partition_for
from topology.settings import Settings

PARTITIONS = 8


class Log(list):  # type: ignore[type-arg]
    """What the producer sent, in order: ("send", topic) for an output,
    ("put" | "delete", table) for a record on a table's changelog."""


class Changelog:
    def __init__(self, name: str) -> None:
        self.name = name

    def get_topic_name(self) -> str:
        return f"changelog:{self.name}"


class RecordingTable(dict):  # type: ignore[type-arg]
    """A table whose local store is itself; its writes are seen on the producer."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.changelog_topic = Changelog(name)
        self.data = self


def _producer(log: Log) -> RecordingProducer:
    """Outputs as ("send", topic) and in ``producer.sent``; changelog records as
    ("put" | "delete", table)."""

    def on_record(topic: str, key: bytes | None, value: bytes | None, partition: int | None) -> None:
        if topic.startswith("changelog:"):
            log.append(("put" if value is not None else "delete", topic.removeprefix("changelog:")))
            return
        log.append(("send", topic))
        producer.sent.append((topic, key, value))  # type: ignore[attr-defined]

    producer = RecordingProducer(on_record)
    producer.sent = []  # type: ignore[attr-defined]
    return producer


class App:
    def __init__(self, log: Log) -> None:
        self.producer = _producer(log)


class Message:
    def __init__(self, topic: str, partition: int, offset: int, value: bytes, key: bytes | None) -> None:
        self.topic, self.partition, self.offset, self.value, self.key = topic, partition, offset, value, key
        self.headers = [("vex-line", str(offset + 1).encode())]


class Event:
    def __init__(self, message: Message) -> None:
        self.message = message


def _stream(tmp_path, log: Log) -> Stream:  # type: ignore[no-untyped-def]
    settings = Settings(
        app_id="vx-unit", worker_datadir=tmp_path, worker_web_port=0, clock_mode="replay", topic_partitions=PARTITIONS
    )
    p = Pipeline(
        settings=settings,
        app=App(log),
        topics={},  # type: ignore[arg-type]
        tables={name: RecordingTable(name) for name in TABLES},  # type: ignore[misc]
        metrics=WorkerMetrics(),
        config=EngineConfig.from_settings(settings),
        scorer=TreeEditScorer(),
    )
    return Stream(p)


def _lines_by_home() -> tuple[list[bytes], list[bytes]]:
    """The sample classroom's lines of one student homed on partition 0 and of one homed elsewhere."""
    by_student: dict[str, list[bytes]] = {}
    for line in read_lines(SAMPLE_CLASSROOM.read_bytes()):
        by_student.setdefault(routing_key(line) or "", []).append(line)
    home = next(lines for key, lines in by_student.items() if partition_for(key, PARTITIONS) == 0)
    away = next(lines for key, lines in by_student.items() if partition_for(key, PARTITIONS) != 0)
    return home, away


def _raw_events(stream: Stream, lines: list[bytes]) -> list[Event]:
    """The lines as records of the raw topic's partition 0, offsets from 0."""
    raw = stream.p.settings.topic(T.RAW.name)
    return [Event(Message(raw, 0, i, line, None)) for i, line in enumerate(lines)]


async def _batches(events: list[Event], size: int):  # type: ignore[no-untyped-def]
    for start in range(0, len(events), size):
        yield events[start : start + size]


def test_a_line_on_its_students_partition_is_analysed_where_it_is_read(tmp_path) -> None:
    log = Log()
    stream = _stream(tmp_path, log)
    home, away = _lines_by_home()
    events = _raw_events(stream, home[:40] + away[:40])
    asyncio.run(run_batches(_batches(events, 25), stream))
    sent: list[tuple[str, bytes | None, bytes]] = stream.p.app.producer.sent  # type: ignore[attr-defined]
    topics = [topic for topic, _, _ in sent]
    assert topics.count(T.EVENTS.name) == 80  # every accepted line is published once
    assert topics.count(T.REKEYED.name) == 40  # only the student homed elsewhere is re-keyed
    assert {key for topic, key, _ in sent if topic == T.REKEYED.name} == {routing_key(away[0]).encode()}
    assert T.RUNS.name in topics  # the home student's runs were scored right away
    home_key, away_key = routing_key(home[0]), routing_key(away[0])
    assert home_key.encode() in stream.p.tables["students"]
    assert away_key.encode() not in stream.p.tables["students"]  # its state waits for the re-keyed records


def test_a_batch_writes_its_state_after_its_outputs_in_a_consistent_order(tmp_path) -> None:
    log = Log()
    stream = _stream(tmp_path, log)
    home, _ = _lines_by_home()
    events = _raw_events(stream, home[:60])
    asyncio.run(run_batches(_batches(events, 20), stream))
    # The log alternates: a batch's sends, then its table writes.
    runs: list[list[tuple[str, ...]]] = []
    for entry in log:
        kind = "send" if entry[0] == "send" else "table"
        if not runs or (runs[-1][0][0] == "send") != (kind == "send"):
            runs.append([])
        runs[-1].append(entry)
    writes = [run for run in runs if run[0][0] != "send"]
    assert [run[0][0] == "send" for run in runs] == [True, False] * 3  # three batches
    for batch in writes:
        order = [e for e in batch if e[1] in ("programs", "metrics", "students")]
        states = [i for i, e in enumerate(order) if e == ("put", "students")]
        new = [i for i, e in enumerate(order) if e[0] == "put" and e[1] != "students"]
        gone = [i for i, e in enumerate(order) if e[0] == "delete"]
        assert states, batch
        assert all(i < min(states) for i in new)  # new programs before the states that refer to them
        assert all(i > max(states) for i in gone)  # deletions after the states that stopped referring
    assert any(("put", "programs") in batch for batch in writes)


def test_a_batch_reaches_the_producer_as_one_batch_per_topic_partition(tmp_path) -> None:
    log = Log()
    stream = _stream(tmp_path, log)
    home, away = _lines_by_home()
    events = _raw_events(stream, home[:50] + away[:50])
    producer: RecordingProducer = stream.p.app.producer  # type: ignore[assignment]

    async def scenario() -> None:
        for start in range(0, len(events), 25):
            before = len(producer.batch_log)
            for event in events[start : start + 25]:
                await stream.one(event)
            assert len(producer.batch_log) == before  # nothing leaves while the batch runs
            await stream.flush()
            handed = producer.batch_log[before:]
            partitions = [(topic, partition) for topic, partition, _ in handed]
            assert len(partitions) == len(set(partitions))  # one batch per topic partition
            assert sum(count for _, _, count in handed) > len(handed)

    asyncio.run(scenario())
    assert sum(count for _, _, count in producer.batch_log) == len([e for e in log if e[0] != "delete"])
    metrics = stream.p.metrics.records_out
    assert metrics.labels(T.EVENTS.name)._value.get() == 100  # counted once per flush, per record


@pytest.mark.parametrize("bad", [b'{"id": 1, "studentID": "s"', b"\xff\xfe not json"])
def test_a_bad_line_is_dead_lettered_and_the_next_line_goes_on(tmp_path, bad: bytes) -> None:
    log = Log()
    stream = _stream(tmp_path, log)
    home, _ = _lines_by_home()
    raw = stream.p.settings.topic(T.RAW.name)
    events = [Event(Message(raw, 0, 0, bad, None)), Event(Message(raw, 0, 1, home[0], None))]
    asyncio.run(run_batches(_batches(events, 10), stream))
    topics = [topic for topic, _, _ in stream.p.app.producer.sent]  # type: ignore[attr-defined]
    assert topics[0] == T.DEADLETTER.name
    assert T.EVENTS.name in topics[1:]


def test_the_agent_counts_its_records_and_the_cpu_time_it_spent_on_them(tmp_path) -> None:
    import time

    log = Log()
    stream = _stream(tmp_path, log)
    home, away = _lines_by_home()
    events = _raw_events(stream, home[:30] + away[:30])
    before = time.thread_time()
    asyncio.run(run_batches(_batches(events, 25), stream))
    spent = time.thread_time() - before
    metrics = stream.p.metrics
    assert metrics.stream_agent_records._value.get() == 60  # three batches: 25 + 25 + 10
    agent = metrics.stream_agent_cpu._value.get()
    assert 0 < agent <= spent  # the batches' own time, within what this thread spent on the whole run
    text = metrics.render().decode()
    assert "vexnudge_stream_agent_cpu_seconds_total" in text
    assert "vexnudge_stream_agent_records_total 60.0" in text
