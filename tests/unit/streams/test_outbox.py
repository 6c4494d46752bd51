"""Outbox: a batch's records grouped per topic partition, handed to the producer
as whole batches in the order the batches were opened, a full batch at once;
the acknowledgement of a batch reports its last record's offset."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from streams.agents.outbox import Outbox
from tests.fakes.producer import RecordingProducer


def _outbox(capacity: int = 1000) -> tuple[Outbox, RecordingProducer, list[tuple[Any, ...]]]:
    sent: list[tuple[Any, ...]] = []
    producer = RecordingProducer(lambda topic, key, value, partition: sent.append((topic, partition, key)),
                                 batch_capacity=capacity)
    return Outbox(producer), producer, sent


def test_records_wait_until_sent_then_leave_grouped_by_partition_in_opening_order() -> None:
    outbox, producer, sent = _outbox()

    async def scenario() -> int:
        await outbox.add("runs", 1, b"a", b"1", label="vex.runs")
        await outbox.add("events", 0, b"b", b"2", label="vex.events")
        await outbox.add("runs", 1, b"c", b"3", label="vex.runs")
        await outbox.add("runs", 2, b"d", None)  # a tombstone
        assert sent == [] and len(outbox) == 4
        return await outbox.send()

    assert asyncio.run(scenario()) == 4
    assert sent == [("runs", 1, b"a"), ("runs", 1, b"c"), ("events", 0, b"b"), ("runs", 2, b"d")]
    assert producer.batches == 3 and len(outbox) == 0
    assert outbox.take_counts() == {"vex.runs": 2, "vex.events": 1}
    assert outbox.take_counts() == {}


def test_a_full_batch_is_handed_over_at_once_and_the_partition_keeps_its_order() -> None:
    outbox, producer, sent = _outbox(capacity=2)

    async def scenario() -> None:
        for i in range(5):
            await outbox.add("events", 0, str(i).encode(), b"v")
        assert [key for _, _, key in sent] == [b"0", b"1", b"2", b"3"]  # two full batches left
        await outbox.send()

    asyncio.run(scenario())
    assert [key for _, _, key in sent] == [b"0", b"1", b"2", b"3", b"4"]
    assert producer.batches == 3


def test_a_record_that_fits_no_batch_is_refused_with_a_clear_error() -> None:
    outbox, _, _ = _outbox(capacity=0)
    with pytest.raises(ValueError, match="does not fit in a producer batch"):
        asyncio.run(outbox.add("events", 3, b"k", b"v" * 10))


def test_the_acknowledgement_reports_each_batchs_last_offset() -> None:
    outbox, _, _ = _outbox(capacity=3)
    acked: list[tuple[Any, int]] = []

    async def scenario() -> None:
        for i in range(4):
            await outbox.add("changelog", 5, str(i).encode(), b"v", lambda tp, offset: acked.append((tp, offset)))
        await outbox.send()
        await asyncio.sleep(0)

    asyncio.run(scenario())
    assert acked == [(("changelog", 5), 2), (("changelog", 5), 3)]


def test_records_of_a_partition_with_a_batch_waiting_go_one_by_one_without_waiting() -> None:
    outbox, producer, sent = _outbox()
    producer.kafka._message_accumulator._batches[("runs", 1)] = [object()]  # not sent yet
    acked: list[tuple[Any, int]] = []

    async def scenario() -> None:
        await outbox.add("runs", 1, b"a", b"1", lambda tp, offset: acked.append((tp, offset)))
        await outbox.add("runs", 2, b"b", b"2")
        await outbox.add("runs", 1, b"c", b"3")
        await outbox.send()
        await asyncio.sleep(0)

    asyncio.run(scenario())
    assert sent == [("runs", 1, b"a"), ("runs", 1, b"c"), ("runs", 2, b"b")]
    assert producer.batch_log == [("runs", 2, 1)]  # only the free partition went as a batch
    assert outbox.sent_singly == 2
    assert acked == [(("runs", 1), 1)]  # the last of the single records


def test_a_failed_delivery_is_logged_and_acknowledges_nothing(caplog) -> None:
    producer = RecordingProducer(lambda *record: None)

    async def fail(batch: Any, topic: str, *, partition: int) -> asyncio.Future[Any]:
        failed: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        failed.set_exception(ConnectionError("broker gone"))
        return failed

    producer.kafka.send_batch = fail  # type: ignore[method-assign]
    outbox = Outbox(producer)
    acked: list[int] = []

    async def scenario() -> None:
        await outbox.add("changelog", 0, b"k", b"v", lambda tp, offset: acked.append(offset))
        await outbox.send()
        await asyncio.sleep(0)

    with caplog.at_level(logging.ERROR, logger="vexnudge.outbox"):
        asyncio.run(scenario())
    assert acked == []
    assert "delivery of 1 records to changelog[0] failed" in caplog.text
