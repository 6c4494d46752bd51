"""The outbox on the real broker: records of a batch land per partition in the
order they were added (a full batch handed over early included), a record sent
directly after the outbox comes after its records, the acknowledgement
reports the offset the last record of each batch really has, and a partition
whose producer batch is still waiting gets the records appended to that batch,
without the outbox waiting for it to leave."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from tests.integration.pipeline import isolated, run
from topology.kafka_admin import ensure_topics, read_to_end
from topology.seam.outbox import Outbox

pytestmark = pytest.mark.integration


class FaustLike:
    """What the outbox reads from Faust's producer: its aiokafka producer."""

    def __init__(self, producer: AIOKafkaProducer) -> None:
        self.producer = producer

    def _ensure_producer(self) -> AIOKafkaProducer:
        return self.producer


def test_records_land_in_order_with_the_offsets_the_acknowledgements_report(stack, unique_prefix) -> None:
    settings = isolated(stack, unique_prefix)
    topics = [settings.topic("outbox.a"), settings.topic("outbox.b")]
    acked: list[tuple[Any, int]] = []

    async def scenario() -> list[Any]:
        await ensure_topics(settings, topics)
        producer = AIOKafkaProducer(
            bootstrap_servers=settings.kafka_bootstrap_servers, linger_ms=0, max_batch_size=16384
        )
        await producer.start()
        try:
            outbox = Outbox(FaustLike(producer))
            for i in range(40):  # 4 KB values: a 16 KB batch fills after three records
                topic, partition = topics[i % 2], i % 3
                outbox.add(
                    topic, partition, f"k{i}".encode(), bytes([i]) * 4096, lambda tp, offset: acked.append((tp, offset))
                )
            await outbox.send()
            last = await producer.send(topics[0], b"direct", key=b"direct", partition=0)
            await producer.flush()
            assert (await last).offset == 7  # after the 7 records the outbox put there
        finally:
            await producer.stop()
        return [record async for record in read_to_end(settings, topics)]

    records = run(scenario())
    _check(records, topics, acked)


def _check(records: list[Any], topics: list[str], acked: list[tuple[Any, int]]) -> None:
    by_partition: dict[tuple[str, int], list[bytes]] = {}
    for record in records:
        by_partition.setdefault((record.topic, record.partition), []).append(record.key)
    for (topic, partition), keys in by_partition.items():
        expected = [f"k{i}".encode() for i in range(40) if topics[i % 2] == topic and i % 3 == partition]
        if (topic, partition) == (topics[0], 0):
            expected.append(b"direct")
        assert keys == expected
    last_offsets: dict[tuple[str, int], int] = {}
    for tp, offset in acked:
        last_offsets[(tp.topic, tp.partition)] = max(offset, last_offsets.get((tp.topic, tp.partition), -1))
    assert len(acked) > 6  # full batches were handed over early
    assert last_offsets == {tp: len([k for k in keys if k != b"direct"]) - 1 for tp, keys in by_partition.items()}


def test_a_partition_with_a_batch_waiting_gets_the_records_one_by_one_behind_it(stack, unique_prefix) -> None:
    settings = isolated(stack, unique_prefix)
    topic = settings.topic("outbox.c")

    async def scenario() -> tuple[list[bytes], int, int]:
        await ensure_topics(settings, [topic])
        producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers, linger_ms=0)
        await producer.start()
        try:
            await producer.send_and_wait(topic, b"warm", key=b"warm", partition=0)
            outbox = Outbox(FaustLike(producer))
            acked: list[int] = []
            for i in range(3):
                outbox.add(topic, 0, f"k{i}".encode(), b"v", lambda tp, offset: acked.append(offset))
            first = await producer.send(topic, b"first", key=b"first", partition=0)  # waits in the producer
            await outbox.send()  # no yield since: the batch above is still there
            await producer.flush()
            assert (await first).offset == 1 and acked == [4]  # warm, first, k0, k1, k2
        finally:
            await producer.stop()
        keys = [record.key async for record in read_to_end(settings, [topic])]
        return keys, outbox.appended, outbox.sent_batches

    keys, appended, batches = run(scenario())
    assert keys == [b"warm", b"first", b"k0", b"k1", b"k2"]
    assert (appended, batches) == (3, 0)
