"""How ``vexnudge tail`` names a topic and what it says when the broker has none such."""

from __future__ import annotations

import asyncio

import pytest

from topology import kafka_admin
from topology.settings import Settings
from vexnudge.cli.tail import NoSuchTopic, resolve


@pytest.fixture
def broker(monkeypatch):
    """A broker holding the topics (name → partitions) the test puts here."""
    topics: dict[str, int] = {}

    async def partition_counts(settings, names):
        return {n: topics[n] for n in names if n in topics}

    async def broker_topics(settings):
        return sorted(topics)

    monkeypatch.setattr(kafka_admin, "partition_counts", partition_counts)
    monkeypatch.setattr(kafka_admin, "broker_topics", broker_topics)
    return topics


def _resolve(prefix: str, name: str) -> tuple[str, int]:
    return asyncio.run(resolve(Settings(topic_prefix=prefix), name))


def test_a_logical_name_gets_the_prefix_and_a_full_name_is_taken_as_is(broker) -> None:
    broker.update({"class7.vex.triggers": 8, "class7-students-changelog": 3})
    assert _resolve("class7.", "vex.triggers") == ("class7.vex.triggers", 8)
    assert _resolve("", "class7.vex.triggers") == ("class7.vex.triggers", 8)
    assert _resolve("", "class7-students-changelog") == ("class7-students-changelog", 3)


def test_a_missing_topic_names_the_prefixes_that_have_it(broker) -> None:
    broker.update({f"demo-{i}.vex.runs": 8 for i in range(7)} | {"demo-0.vex.triggers": 8})
    with pytest.raises(NoSuchTopic) as refused:
        _resolve("", "vex.runs")
    text = str(refused.value)
    assert "has no topic 'vex.runs' (TOPIC_PREFIX='')" in text
    assert "demo-0.vex.runs, demo-1.vex.runs, demo-2.vex.runs, demo-3.vex.runs, demo-4.vex.runs and 2 more" in text
    assert text.endswith("e.g. TOPIC_PREFIX=demo-6. vexnudge tail vex.runs")


def test_a_prefix_with_nothing_anywhere_says_nothing_was_produced(broker) -> None:
    with pytest.raises(NoSuchTopic, match="nothing was produced under that prefix yet"):
        _resolve("class7.", "vex.episodes")


def test_an_unknown_name_lists_the_pipelines_topics(broker) -> None:
    with pytest.raises(NoSuchTopic, match=r"'vex.trigger' is neither a topic of the pipeline \(vex.telemetry.raw, "):
        _resolve("class7.", "vex.trigger")
