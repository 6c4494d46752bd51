"""The live clock: wall-clock ticks fire inactive alerts for quiet students,
and students idle past the recency window get none."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime

import pytest

from tests.integration.pipeline import isolated, read_values, start_worker
from topology.kafka_admin import ensure_topics, wait_analysed
from topology.schemas import TriggerFired, decode
from topology.settings import Settings
from vexnudge.producer import produce_lines

pytestmark = pytest.mark.integration


def line(student: str, ts: float, event_id: int) -> bytes:
    stamp = datetime.fromtimestamp(int(ts), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    payload = {
        "eventType": "blockChanged",
        "studentID": student,
        "sessionID": f"{student}-s",
        "timestamp": stamp,
        "playground": "GOMars",
    }
    return json.dumps({"id": event_id, "raw_message": json.dumps(payload)}).encode()


async def triggers(settings: Settings) -> list[TriggerFired]:
    return [decode(TriggerFired, v) for _, v in (await read_values(settings, ["vex.triggers"]))["vex.triggers"]]


def test_ticks_alert_quiet_students_and_skip_forgotten_ones(stack, unique_prefix) -> None:
    settings = isolated(stack, unique_prefix)
    now = time.time()
    # idle for 250 s: one alert due now; idle for 2 h with a 1 h recency window: forgotten
    lines = [line("quiet", now - 250, 1), line("gone", now - 7200, 2)]

    async def scenario() -> list[TriggerFired]:
        await ensure_topics(settings)
        worker = start_worker(
            settings, "live", "--set", "trigger_poll_interval_s=0.5", "--set", "trigger_student_recency_hours=1"
        )
        try:
            await produce_lines(settings, lines)
            await wait_analysed(settings, 60)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                found = await triggers(settings)
                if found:
                    await asyncio.sleep(2)  # more ticks: nothing else may fire
                    return await triggers(settings)
                await asyncio.sleep(0.5)
            return []
        finally:
            worker.stop()

    fired = asyncio.run(scenario())
    assert [(t.student_key, t.type.value, t.alert, t.trailing) for t in fired] == [("quiet", "inactive", 0, True)]
    assert fired[0].ts == pytest.approx(int(now - 250) + 240)
