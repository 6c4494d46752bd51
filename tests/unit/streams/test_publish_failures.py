"""Every output that fails to publish is counted (vexnudge_publish_failures_total)
and makes /healthz say ``degraded``: never only logged."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from streams.agents import web
from streams.agents.emit import count_failed_delivery, publish
from tests.fakes.producer import RecordingProducer
from topology.metrics import WorkerMetrics
from topology.schemas.feedback import NudgeOutcome
from topology.seam.outbox import Outbox


class Settings(SimpleNamespace):
    def topic(self, name: str) -> str:
        return f"{self.topic_prefix}{name}"


def pipeline(producer: Any = None) -> Any:
    settings = Settings(topic_prefix="t1.", app_id="app", clock_mode="live", raw_max_bytes=1_000_000)
    return SimpleNamespace(
        settings=settings, metrics=WorkerMetrics(), partition_of=lambda k: 0, app=SimpleNamespace(producer=producer)
    )


def outcome() -> NudgeOutcome:
    return NudgeOutcome(
        trigger_id="00000000-0000-0000-0000-000000000001",
        trigger_type="inactive",
        student_key="s",
        session_id="x",
        status="failed",
        reason="gave_up",
        at=1.0,
    )


def failures(p: Any) -> dict[str, int]:
    return p.metrics.degraded().get("publish_failures", {})


def _failing_send_batch(exc: BaseException) -> Any:
    async def send_batch(batch: Any, topic: str, *, partition: int) -> asyncio.Future[Any]:
        failed: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        failed.set_exception(exc)
        return failed

    return send_batch


def test_a_batch_the_broker_refuses_is_counted_per_record_under_the_logical_topic() -> None:
    p = pipeline()
    producer = RecordingProducer(lambda *record: None)
    producer.kafka.send_batch = _failing_send_batch(ConnectionError("broker gone"))  # type: ignore[method-assign]
    outbox = Outbox(producer, on_failed=count_failed_delivery(p))

    async def scenario() -> None:
        for i in range(3):
            outbox.add("t1.vex.runs", 0, str(i).encode(), b"v")
        outbox.add("app-students-changelog", 1, b"k", b"v")
        await outbox.send()
        await asyncio.sleep(0)

    asyncio.run(scenario())
    assert failures(p) == {"vex.runs": 3, "app-students-changelog": 1}
    assert web.health(p)["status"] == "degraded"


def test_records_appended_to_a_waiting_batch_that_fails_are_counted() -> None:
    counted: list[tuple[str, int]] = []
    producer = RecordingProducer(lambda *record: None)
    outbox = Outbox(producer, on_failed=lambda topic, n, exc: counted.append((topic, n)))

    async def scenario() -> None:
        waiting = producer.kafka.hold("runs", 1, records=1, capacity=4)
        outbox.add("runs", 1, b"a", b"1")
        outbox.add("runs", 1, b"b", b"2")
        await outbox.send()
        waiting.future.set_exception(ConnectionError("broker gone"))
        await asyncio.sleep(0)

    asyncio.run(scenario())
    assert counted == [("runs", 2)]


def test_a_record_too_large_for_any_batch_is_counted_and_raised() -> None:
    counted: list[tuple[str, int]] = []
    producer = RecordingProducer(lambda *record: None, batch_capacity=0)
    outbox = Outbox(producer, on_failed=lambda topic, n, exc: counted.append((topic, n)))
    outbox.add("events", 0, b"k", b"v" * 10)
    with pytest.raises(ValueError, match="does not fit"):
        asyncio.run(outbox.send())
    assert counted == [("events", 1)]


def test_a_send_that_raises_is_counted_and_raised() -> None:
    class Refusing:
        async def send(self, *args: Any) -> Any:
            raise ConnectionError("no broker")

    p = pipeline(Refusing())
    with pytest.raises(ConnectionError):
        asyncio.run(publish(p, outcome(), "s"))
    assert failures(p) == {"vex.nudge.outcomes": 1}


@pytest.mark.parametrize("delivered", [True, False])
def test_a_delivery_that_fails_later_is_counted(delivered: bool) -> None:
    class Producer:
        async def send(self, *args: Any) -> asyncio.Future[None]:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            if delivered:
                future.set_result(None)
            else:
                future.set_exception(ConnectionError("broker refused the batch"))
            return future

    p = pipeline(Producer())

    async def scenario() -> None:
        await publish(p, outcome(), "s")
        await asyncio.sleep(0)

    asyncio.run(scenario())
    assert failures(p) == ({} if delivered else {"vex.nudge.outcomes": 1})
    rendered = p.metrics.render().decode()
    assert ('vexnudge_publish_failures_total{topic="vex.nudge.outcomes"} 1.0' in rendered) is not delivered


def test_healthz_is_ok_until_a_failure_then_degraded_with_the_counts() -> None:
    p = pipeline()
    assert web.health(p) == {"status": "ok", "app_id": "app", "clock": "live", "degraded": {}}
    p.metrics.publish_failed("vex.feedback", 2)
    p.metrics.sink_dead_lettered("event_store", "sink_refused")
    assert web.health(p)["status"] == "degraded"
    assert web.health(p)["degraded"] == {
        "publish_failures": {"vex.feedback": 2},
        "sink_dead_letters": {"event_store:sink_refused": 1},
    }
