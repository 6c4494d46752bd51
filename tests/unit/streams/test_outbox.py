"""Outbox: a batch's records grouped per topic partition and handed to the
producer as whole batches when the agent sends the outbox, in the order the
partitions were first written to; a partition whose batch still waits in the
producer gets the records appended to it (no waiting); each acknowledgement
reports the offset of the last record it covers."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from tests.fakes.producer import RecordingProducer
from topology.seam.outbox import Outbox


def _outbox(capacity: int = 1000) -> tuple[Outbox, RecordingProducer, list[tuple[Any, ...]]]:
    sent: list[tuple[Any, ...]] = []
    producer = RecordingProducer(
        lambda topic, key, value, partition: sent.append((topic, partition, key)), batch_capacity=capacity
    )
    return Outbox(producer), producer, sent


def test_records_wait_until_sent_then_leave_grouped_by_partition_in_first_written_order() -> None:
    outbox, producer, sent = _outbox()
    outbox.add("runs", 1, b"a", b"1", label="vex.runs")
    outbox.add("events", 0, b"b", b"2", label="vex.events")
    outbox.add("runs", 1, b"c", b"3", label="vex.runs")
    outbox.add("runs", 2, b"d", None)  # a tombstone
    assert sent == [] and len(outbox) == 4
    assert asyncio.run(outbox.send()) == 4
    assert sent == [("runs", 1, b"a"), ("runs", 1, b"c"), ("events", 0, b"b"), ("runs", 2, b"d")]
    assert producer.batch_log == [("runs", 1, 2), ("events", 0, 1), ("runs", 2, 1)] and len(outbox) == 0
    assert outbox.take_counts() == {"vex.runs": 2, "vex.events": 1}
    assert outbox.take_counts() == {}


def test_more_records_than_one_batch_holds_go_as_several_in_order() -> None:
    outbox, producer, sent = _outbox(capacity=2)
    for i in range(5):
        outbox.add("events", 0, str(i).encode(), b"v")
    asyncio.run(outbox.send())
    assert [key for _, _, key in sent] == [b"0", b"1", b"2", b"3", b"4"]
    assert producer.batch_log == [("events", 0, 2), ("events", 0, 2), ("events", 0, 1)]


def test_a_record_that_fits_no_batch_is_refused_with_a_clear_error() -> None:
    outbox, _, _ = _outbox(capacity=0)
    outbox.add("events", 3, b"k", b"v" * 10)
    with pytest.raises(ValueError, match="does not fit in a producer batch"):
        asyncio.run(outbox.send())


def test_the_acknowledgement_reports_each_batchs_last_offset() -> None:
    outbox, _, _ = _outbox(capacity=3)
    acked: list[tuple[Any, int]] = []

    async def scenario() -> None:
        for i in range(4):
            outbox.add("changelog", 5, str(i).encode(), b"v", lambda tp, offset: acked.append((tp, offset)))
        await outbox.send()
        await asyncio.sleep(0)

    asyncio.run(scenario())
    assert acked == [(("changelog", 5), 2), (("changelog", 5), 3)]


def test_records_of_a_partition_with_a_batch_waiting_are_appended_to_it() -> None:
    outbox, producer, sent = _outbox()
    acked: list[tuple[Any, int]] = []

    async def scenario() -> None:
        producer.kafka.hold("runs", 1, records=2, capacity=4)  # not taken by the sender yet
        outbox.add("runs", 1, b"a", b"1", lambda tp, offset: acked.append((tp, offset)))
        outbox.add("runs", 2, b"b", b"2")
        outbox.add("runs", 1, b"c", b"3")
        outbox.add("runs", 1, b"e", b"4")  # one more than the waiting batch holds
        await outbox.send()
        assert sent == [("runs", 2, b"b")]  # the free partition's batch; nothing waited
        producer.kafka.release("runs", 1)
        await asyncio.sleep(0)

    asyncio.run(scenario())
    assert sent[1:] == [
        ("runs", 1, b"held0"),
        ("runs", 1, b"held1"),
        ("runs", 1, b"a"),
        ("runs", 1, b"c"),
        ("runs", 1, b"e"),
    ]
    assert outbox.appended == 2
    assert producer.batch_log == [("runs", 1, 1), ("runs", 2, 1)]  # the rest: a batch of its own, behind
    assert sorted(acked) == [(("runs", 1), 3), (("runs", 1), 4)]  # last of each: held0 held1 a c | e


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
        outbox.add("changelog", 0, b"k", b"v", lambda tp, offset: acked.append(offset))
        await outbox.send()
        await asyncio.sleep(0)

    with caplog.at_level(logging.ERROR, logger="vexnudge.outbox"):
        asyncio.run(scenario())
    assert acked == []
    assert "delivery of records to changelog[0] failed" in caplog.text
