"""``vexnudge tail`` on the real broker: a topic's records as JSON lines, one
student's, following new records, and clear refusals for topics that are not
there."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import orjson
import pytest
from aiokafka import AIOKafkaProducer

from tests.integration.pipeline import isolated, run
from topology.kafka_admin import ensure_topics

pytestmark = pytest.mark.integration


def _tail(settings, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vexnudge.cli", "tail", *args],
        env=_env(settings),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _env(settings) -> dict[str, str]:
    return {
        **os.environ,
        "TOPIC_PREFIX": settings.topic_prefix,
        "KAFKA_BOOTSTRAP_SERVERS": settings.kafka_bootstrap_servers,
    }


async def _produce(settings, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers)
    await producer.start()
    try:
        for key, value in records:
            await producer.send_and_wait(topic, value, key=key, partition=0)
    finally:
        await producer.stop()


TRIGGERS = [
    (b"otter12", b'{"type": "wheel_spin", "n": 1}'),
    (b"koala49", b'{"type": "explorer", "n": 2}'),
    (b"otter12", b"not json \xff"),
    (b"otter12", b'{"type": "inactive", "n": 4}'),
]


def test_tail_prints_a_topics_records_and_one_students(stack, unique_prefix) -> None:
    settings = isolated(stack, unique_prefix)
    run(ensure_topics(settings))
    run(_produce(settings, settings.topic("vex.triggers"), TRIGGERS))

    every = _tail(settings, "vex.triggers", "--from-beginning", "--until-end")
    assert every.returncode == 0, every.stderr
    assert [orjson.loads(line) for line in every.stdout.splitlines()] == [
        {"type": "wheel_spin", "n": 1},
        {"type": "explorer", "n": 2},
        {"key": "otter12", "raw": "not json \ufffd"},  # not JSON: shown with its key, not dropped
        {"type": "inactive", "n": 4},
    ]

    one = _tail(settings, "vex.triggers", "--from-beginning", "--until-end", "--student", " OTTER12 ")
    assert [orjson.loads(line).get("n") for line in one.stdout.splitlines()] == [1, None, 4]

    # By its full name (any topic on the broker), and only what comes after the start.
    full = _tail(settings, settings.topic("vex.triggers"), "--until-end")
    assert (full.returncode, full.stdout) == (0, "")


def test_tail_follows_new_records_until_interrupted(stack, unique_prefix) -> None:
    settings = isolated(stack, unique_prefix)
    run(ensure_topics(settings))
    run(_produce(settings, settings.topic("vex.runs"), [(b"otter12", b'{"run": 1}')]))
    follower = subprocess.Popen(
        [sys.executable, "-m", "vexnudge.cli", "tail", "vex.runs", "--from-beginning"],
        env=_env(settings),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert follower.stdout is not None
        assert orjson.loads(follower.stdout.readline()) == {"run": 1}
        run(_produce(settings, settings.topic("vex.runs"), [(b"otter12", b'{"run": 2}')]))
        assert orjson.loads(follower.stdout.readline()) == {"run": 2}  # a record produced after the start
        time.sleep(0.2)
        assert follower.poll() is None  # still following
    finally:
        follower.terminate()
        follower.communicate(timeout=30)  # waits, and closes both pipes


def test_tail_names_what_exists_when_the_topic_does_not(stack, unique_prefix) -> None:
    settings = isolated(stack, unique_prefix)
    run(ensure_topics(settings, [settings.topic("vex.triggers")]))
    other = isolated(stack, unique_prefix.rstrip(".") + "-other.")

    missing = _tail(other, "vex.triggers", "--until-end")
    assert missing.returncode == 2
    assert f"has no topic '{other.topic('vex.triggers')}'" in missing.stderr
    assert "it exists under other prefixes" in missing.stderr  # at least this test's own
    assert "Set TOPIC_PREFIX to read one" in missing.stderr

    unknown = _tail(settings, "vex.trigger", "--until-end")
    assert unknown.returncode == 2
    assert "'vex.trigger' is neither a topic of the pipeline" in unknown.stderr
    assert "vex.triggers" in unknown.stderr


def test_tail_without_a_broker_says_how_to_start_one(stack, unique_prefix) -> None:
    settings = isolated(stack, unique_prefix).model_copy(update={"kafka_bootstrap_servers": "127.0.0.1:9"})
    down = _tail(settings, "vex.triggers", "--until-end")
    assert down.returncode == 1
    assert "cannot reach Kafka at 127.0.0.1:9" in down.stderr
    assert "vexnudge stack up" in down.stderr
