"""The Faust app: settings → app, topics, tables and the agents wired to them.

One place builds everything (:func:`build_pipeline`), so the worker command,
the tests and the tools get the same topology.  Every keyed topic and table
has ``TOPIC_PARTITIONS`` partitions; values are raw bytes whose schemas live
in :mod:`topology.schemas`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import faust

from streams.config import EngineConfig
from streams.partitioning import partition_for
from streams.scoring import TreeEditScorer
from topology import topics as T
from topology import transport
from topology.handover import RawSchema
from topology.kafka_admin import TABLES
from topology.metrics import WorkerMetrics
from topology.settings import Settings


@dataclass
class Pipeline:
    """The app and everything the agents share (no module-level state)."""

    settings: Settings
    app: faust.App
    topics: dict[str, faust.TopicT]
    tables: dict[str, faust.types.TableT]
    metrics: WorkerMetrics
    config: EngineConfig
    scorer: TreeEditScorer
    extras: dict[str, Any] = field(default_factory=dict)
    partitions: dict[str, int] = field(default_factory=dict)
    """The partition of each key seen (murmur2 is slow in Python)."""

    def topic(self, spec: T.TopicSpec) -> faust.TopicT:
        """The Faust topic of a contract topic."""
        return self.topics[spec.name]

    def partition_of(self, key: str) -> int:
        """The partition of a key on every contract topic: Kafka's default
        partitioner (all topics have ``TOPIC_PARTITIONS`` partitions; the
        worker refuses any other count), remembered for the next record."""
        partition = self.partitions.get(key)
        if partition is None:
            if len(self.partitions) > 100_000:
                self.partitions.clear()
            partition = self.partitions[key] = partition_for(key, self.settings.topic_partitions)
        return partition


def _faust_app(settings: Settings) -> faust.App:
    transport.register()
    app = faust.App(
        settings.group_id,
        broker=[f"{transport.SCHEME}://{h.strip()}" for h in settings.kafka_bootstrap_servers.split(",")],
        store=settings.worker_store,
        datadir=str(settings.worker_datadir),
        topic_partitions=settings.topic_partitions,
        topic_replication_factor=settings.topic_replication_factor,
        topic_disable_leader=True,
        table_standby_replicas=0,
        processing_guarantee="at_least_once",
        broker_commit_interval=settings.broker_commit_interval_s,
        broker_session_timeout=settings.broker_session_timeout_s,
        consumer_auto_offset_reset="earliest",
        stream_recovery_delay=0.0,
        stream_wait_empty=True,
        broker_max_poll_records=500,
        # 4 MiB per partition and fetch (Faust's default is 1 MiB, ~140 raw lines): fewer
        # of the fetch stalls that slow a worker catching up (docs/performance.md,
        # "Ingest").  Measured: ingest + analysis +18-28 % events/s (591 -> 699/s),
        # ingest alone 780 -> 1,497/s; peak RSS while catching up +50-70 MiB.
        consumer_max_fetch_size=4 * 1024 * 1024,
        # linger 0: records leave in the order they were produced (outputs before the
        # state write that records them as done, new programs before the states that
        # refer to them), so a crash never keeps a state whose outputs or programs
        # were lost; batching still happens while a request is in flight, and the
        # stream agent enqueues a whole batch's records without yielding, so they
        # share a request anyway (docs/performance.md, "Pipeline": 37 requests/s
        # at 2,300 events/s; a linger would add latency and break the order).
        producer_linger_ms=0,
        producer_max_batch_size=262144,
        consumer_metadata_max_age_ms=60000,
        producer_metadata_max_age_ms=60000,
        web_port=settings.worker_web_port or 6066,
        web_bind="127.0.0.1",
        web_enabled=settings.worker_web_port > 0,
        key_serializer="raw",
        value_serializer="raw",
    )
    setattr(app, transport.APP_ATTRIBUTE, settings.consumer_fetch_max_wait_ms)
    return app


def build_pipeline(settings: Settings, *, agents: bool = True) -> Pipeline:
    """The complete app.  ``agents=False`` declares topics/tables only."""
    app = _faust_app(settings)
    declared = {
        spec.name: app.topic(settings.topic(spec.name), partitions=settings.topic_partitions,
                             schema=RawSchema())
        for spec in T.ALL_TOPICS
    }
    tables = {
        name: app.Table(name, default=None, partitions=settings.topic_partitions,
                        key_type=bytes, value_type=bytes)
        for name in (TABLES if "stream" in settings.worker_roles else ())
    }
    metrics = WorkerMetrics()
    pipeline = Pipeline(
        settings=settings, app=app, topics=declared, tables=tables, metrics=metrics,
        config=EngineConfig.from_settings(settings),
        scorer=TreeEditScorer.from_settings(
            settings, on_not_comparable=lambda _exc: metrics.not_comparable.inc()),
    )
    if agents:
        from streams.agents import register_all

        register_all(pipeline)
    return pipeline
