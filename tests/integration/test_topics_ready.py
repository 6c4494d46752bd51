"""``ensure_topics`` returns only once new topics take records: the first record
sent to any partition of a topic it just created is not refused by a broker that
has not yet taken up the partition's leadership (a retried send, and a warning
on the console of ``vexnudge replay`` and the demo)."""

from __future__ import annotations

import logging

import pytest
from aiokafka import AIOKafkaProducer

from tests.integration.pipeline import isolated, run
from topology.kafka_admin import ensure_topics, topic_names

pytestmark = pytest.mark.integration


def test_every_partition_of_new_topics_takes_its_first_record_at_once(stack, unique_prefix, caplog) -> None:
    settings = isolated(stack, unique_prefix)

    async def scenario() -> tuple[int, int]:
        created = await ensure_topics(settings)
        assert set(topic_names(settings)) <= set(created)
        producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers, linger_ms=0)
        await producer.start()
        try:
            sent = [
                await producer.send(topic, b"first", key=b"k", partition=partition)
                for topic in created
                for partition in range(settings.topic_partitions)
            ]
            offsets = [(await s).offset for s in sent]
            return len(offsets), offsets.count(0)
        finally:
            await producer.stop()

    with caplog.at_level(logging.WARNING, logger="aiokafka"):
        sent, first = run(scenario())
    refused = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    assert refused == []
    assert sent == first  # each partition's first record, once
