"""The Faust app factory: settings → app, and its contract topics and tables.

The ground of the project: every worker builds its app here, with the same
topics (each with ``TOPIC_PARTITIONS`` partitions and raw-bytes values whose
schemas live in :mod:`topology.schemas`) and tables.  The domain's agents are
attached elsewhere (:mod:`streams.agents.pipeline`); this module imports no
domain package.
"""

from __future__ import annotations

import faust

from topology import topics as T
from topology.kafka_admin import TABLES
from topology.seam import transport
from topology.seam.handover import RawSchema
from topology.settings import Settings


def make_app(settings: Settings) -> faust.App:
    """The Faust app of a worker, configured from ``settings``."""
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


def declare(
    app: faust.App, settings: Settings
) -> tuple[dict[str, faust.TopicT], dict[str, faust.types.TableT[bytes, bytes]]]:
    """Every contract topic (by logical name) and, for a worker with the stream
    role, every table, declared on ``app``."""
    topics = {
        spec.name: app.topic(settings.topic(spec.name), partitions=settings.topic_partitions, schema=RawSchema())
        for spec in T.ALL_TOPICS
    }
    tables = {
        name: app.Table(name, default=None, partitions=settings.topic_partitions, key_type=bytes, value_type=bytes)
        for name in (TABLES if "stream" in settings.worker_roles else ())
    }
    return topics, tables
