"""Broker-side helpers: declare the topics, read offsets, read a topic to its end.

Thin wrappers over aiokafka used by the worker, the CLI tools and the tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError
from aiokafka.structs import ConsumerRecord

from topology.settings import Settings
from topology.topics import ALL_TOPICS

#: The worker's tables; each is backed by a compacted ``<app_id>-<name>-changelog`` topic.
TABLES: tuple[str, ...] = ("ingest-seen", "students", "programs", "metrics", "watermarks")


@asynccontextmanager
async def admin_client(settings: Settings) -> AsyncIterator[AIOKafkaAdminClient]:
    """A started admin client of the settings' broker, closed afterwards."""
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap_servers)
    await admin.start()
    try:
        yield admin
    finally:
        await admin.close()


@asynccontextmanager
async def consumer_client(settings: Settings, *topics: str, **options: object) -> AsyncIterator[AIOKafkaConsumer]:
    """A started consumer of the settings' broker (aiokafka ``options``), stopped afterwards."""
    consumer = AIOKafkaConsumer(*topics, bootstrap_servers=settings.kafka_bootstrap_servers, **options)
    await consumer.start()
    try:
        yield consumer
    finally:
        await consumer.stop()


def topic_names(settings: Settings) -> list[str]:
    """Every topic of the contract, with the settings' prefix."""
    return [settings.topic(spec.name) for spec in ALL_TOPICS]


def changelog_names(settings: Settings) -> list[str]:
    """The app's table changelog topics."""
    return [f"{settings.app_id}-{table}-changelog" for table in TABLES]


async def ensure_topics(settings: Settings, names: Iterable[str] | None = None) -> list[str]:
    """Create missing topics with the ONE partition count; return those created.

    Refuses (ValueError) an existing topic whose partition count differs: a
    mismatch would break co-partitioning of the student's state.
    """
    wanted = list(names) if names is not None else topic_names(settings) + changelog_names(settings)
    compacted = set(changelog_names(settings))
    async with admin_client(settings) as admin:
        existing = await _partition_counts(admin, wanted)
        for name, count in existing.items():
            if count and count != settings.topic_partitions:
                raise ValueError(
                    f"topic {name!r} has {count} partitions but TOPIC_PARTITIONS is "
                    f"{settings.topic_partitions}; use another TOPIC_PREFIX or recreate it"
                )
        missing = [n for n in wanted if not existing.get(n)]
        if missing:
            new = [
                NewTopic(
                    n,
                    settings.topic_partitions,
                    settings.topic_replication_factor,
                    topic_configs={"cleanup.policy": "compact"} if n in compacted else None,
                )
                for n in missing
            ]
            try:
                await admin.create_topics(new)
            except TopicAlreadyExistsError:
                pass
            await _wait_for_leaders(admin, missing)
            await _wait_until_served(settings, missing)
        return missing


async def _wait_for_leaders(admin: AIOKafkaAdminClient, names: list[str], timeout_s: float = 30.0) -> None:
    """Return once every partition of ``names`` has a leader (new topics take a moment)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline:
        described = await admin.describe_topics(names)
        if all(
            item.get("error_code", 0) == 0
            and item.get("partitions")
            and all(p.get("leader", -1) >= 0 for p in item["partitions"])
            for item in described
        ):
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"topics {names} have partitions without a leader after {timeout_s:.0f} s")


async def _wait_until_served(settings: Settings, names: list[str], timeout_s: float = 30.0) -> None:
    """Return once the leader of every partition of ``names`` answers for it.

    The metadata names a new partition's leader a moment before that broker
    acts as its leader; a record produced in between is refused
    (``NotLeaderForPartition``) and retried, with a warning on the console.
    Asking each leader for its end offsets waits that moment out: the consumer
    retries the request until every leader answers, every 20 ms here (with
    aiokafka's default 100 ms, 17 new topics took 1.7 s instead of 0.5 s).
    Called after :func:`_wait_for_leaders`: before the metadata lists a new
    topic, the consumer would warn "not found in cluster metadata" on every try.
    """
    partitions = [TopicPartition(name, p) for name in names for p in range(settings.topic_partitions)]
    async with consumer_client(settings, enable_auto_commit=False, retry_backoff_ms=20) as consumer:
        try:
            await asyncio.wait_for(consumer.end_offsets(partitions), timeout_s)
        except TimeoutError:
            raise TimeoutError(f"the leaders of topics {names} do not answer after {timeout_s:.0f} s") from None


async def _partition_counts(admin: AIOKafkaAdminClient, names: list[str]) -> dict[str, int]:
    described = await admin.describe_topics(names)
    counts: dict[str, int] = {}
    for item in described:
        if item.get("error_code", 0) == 0:
            counts[item["topic"]] = len(item.get("partitions", []))
    return counts


async def partition_counts(settings: Settings, names: list[str]) -> dict[str, int]:
    """The partition count of each of ``names`` that exists on the broker."""
    async with admin_client(settings) as admin:
        return {name: count for name, count in (await _partition_counts(admin, names)).items() if count}


async def broker_topics(settings: Settings) -> list[str]:
    """Every topic on the broker, sorted."""
    async with admin_client(settings) as admin:
        return sorted(await admin.list_topics())


async def end_offsets(settings: Settings, topic: str) -> dict[int, int]:
    """The end offset of every partition of ``topic`` (a contract topic: N partitions)."""
    async with consumer_client(settings) as consumer:
        tps = [TopicPartition(topic, p) for p in range(settings.topic_partitions)]
        ends = await consumer.end_offsets(tps)
        return {tp.partition: off for tp, off in ends.items()}


async def delete_topics_where(settings: Settings, doomed: Callable[[str], bool]) -> list[str]:
    """Delete every topic on the broker whose name ``doomed`` accepts; returns their names."""
    async with admin_client(settings) as admin:
        names = [name for name in await admin.list_topics() if doomed(name)]
        if names:
            await admin.delete_topics(names)
        return names


async def committed_offsets(settings: Settings, group: str, topic: str) -> dict[int, int]:
    """The consumer group's committed offset of every partition of ``topic`` (0 if none)."""
    async with admin_client(settings) as admin:
        offsets = await admin.list_consumer_group_offsets(group)
    return {tp.partition: meta.offset for tp, meta in offsets.items() if tp.topic == topic and meta.offset >= 0}


async def wait_consumed(
    settings: Settings,
    group: str,
    topic: str,
    timeout_s: float = 300.0,
    on_progress: object = None,
) -> None:
    """Wait until ``group`` has committed every record of ``topic`` (raise on timeout)."""
    ends = await end_offsets(settings, topic)
    total = sum(ends.values())
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        done = await committed_offsets(settings, group, topic)
        consumed = sum(min(done.get(p, 0), end) for p, end in ends.items())
        if callable(on_progress):
            on_progress(consumed, total)
        if consumed >= total:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"group {group!r} consumed {consumed}/{total} records of {topic!r}")
        await asyncio.sleep(0.1)


async def wait_analysed(settings: Settings, timeout_s: float = 300.0) -> None:
    """Wait until the worker's group has committed every record of the analysis'
    inputs (:data:`topology.topics.ANALYSIS_INPUTS`, in order)."""
    from topology.topics import ANALYSIS_INPUTS

    for spec in ANALYSIS_INPUTS:
        await wait_consumed(settings, settings.app_id, settings.topic(spec.name), timeout_s)


async def read_to_end(
    settings: Settings,
    topics: list[str],
    *,
    from_beginning: bool = True,
    partitions: int | None = None,
) -> AsyncIterator[ConsumerRecord[bytes, bytes]]:
    """Every record of ``topics`` up to their current end offsets (no group);
    ``partitions``: their partition count when it is not TOPIC_PARTITIONS."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap_servers,
        enable_auto_commit=False,
        auto_offset_reset="earliest" if from_beginning else "latest",
        max_poll_records=2000,
    )
    await consumer.start()
    try:
        count = partitions or settings.topic_partitions
        tps = [TopicPartition(topic, p) for topic in topics for p in range(count)]
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        if from_beginning:
            await consumer.seek_to_beginning(*tps)
        remaining = {tp for tp, end in ends.items() if end > 0}
        if not from_beginning:
            remaining = set()
        while remaining:
            batch = await consumer.getmany(*remaining, timeout_ms=1000)
            for tp, records in batch.items():
                for record in records:
                    if record.offset < ends[tp]:
                        yield record
                if records and records[-1].offset + 1 >= ends[tp]:
                    remaining.discard(tp)
            for tp in list(remaining):
                if await consumer.position(tp) >= ends[tp]:
                    remaining.discard(tp)
    finally:
        await consumer.stop()
