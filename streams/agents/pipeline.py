"""The pipeline: the Faust app, its topics and tables, and what the agents share.

:func:`build_pipeline` is the one place that builds it, so the worker command,
the tests and the tools get the same topology; with ``agents=True`` the
agents of the worker's roles are attached (:func:`streams.agents.register_all`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import faust

from streams.config import EngineConfig
from streams.scoring import TreeEditScorer
from topology import topics as T
from topology.app import declare, make_app
from topology.metrics import WorkerMetrics
from topology.partitioning import partition_for
from topology.settings import Settings


@dataclass
class Pipeline:
    """The app and everything the agents share (no module-level state)."""

    settings: Settings
    app: faust.App
    topics: dict[str, faust.TopicT]
    tables: dict[str, faust.types.TableT[bytes, bytes]]
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


def build_pipeline(settings: Settings, *, agents: bool = True) -> Pipeline:
    """The complete app.  ``agents=False`` declares topics/tables only."""
    app = make_app(settings)
    declared, tables = declare(app, settings)
    metrics = WorkerMetrics()
    pipeline = Pipeline(
        settings=settings,
        app=app,
        topics=declared,
        tables=tables,
        metrics=metrics,
        config=EngineConfig.from_settings(settings),
        scorer=TreeEditScorer.from_settings(settings, on_not_comparable=lambda _exc: metrics.not_comparable.inc()),
    )
    if agents:
        from streams.agents import register_all

        register_all(pipeline)
    return pipeline
