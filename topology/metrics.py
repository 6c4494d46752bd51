"""Prometheus metrics of the worker, on a registry owned by the app instance."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class WorkerMetrics:
    """Every metric the worker exports at ``/metrics``."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.records_in = Counter("vexnudge_records_in_total", "Records consumed", ["topic"], registry=r)
        self.records_out = Counter("vexnudge_records_out_total", "Records published", ["topic"], registry=r)
        self.ingest_accepted = Counter("vexnudge_ingest_accepted_total", "Accepted telemetry events", registry=r)
        self.ingest_rejected = Counter(
            "vexnudge_ingest_rejected_total", "Rejected telemetry lines", ["reason"], registry=r
        )
        self.ingest_blank = Counter("vexnudge_ingest_blank_total", "Blank lines skipped", registry=r)
        self.runs_scored = Counter("vexnudge_runs_scored_total", "Scored runs", registry=r)
        self.runs_unscored = Counter("vexnudge_runs_unscored_total", "Unscored runs", ["reason"], registry=r)
        self.not_comparable = Counter(
            "vexnudge_distance_not_comparable_total", "Run pairs over the size guard", registry=r
        )
        self.triggers = Counter("vexnudge_triggers_total", "Trigger fires", ["type"], registry=r)
        self.processing_errors = Counter(
            "vexnudge_processing_errors_total", "Records dead-lettered by a failing stage", ["stage"], registry=r
        )
        self.duplicates_skipped = Counter(
            "vexnudge_redelivered_skipped_total", "Re-delivered records already applied", registry=r
        )
        self.event_seconds = Histogram(
            "vexnudge_analysis_event_seconds",
            "Analysis time per event (incl. distance)",
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.distance_seconds = Histogram(
            "vexnudge_run_distance_seconds", "Time to score one run", buckets=_LATENCY_BUCKETS, registry=r
        )
        self.commit_gaps_healed = Counter(
            "vexnudge_commit_gaps_healed_total", "Partitions re-read to unblock their commit", registry=r
        )
        self.stream_agent_cpu = Counter(
            "vexnudge_stream_agent_cpu_seconds_total",
            "CPU time of the stream agent's thread while it handled "
            "its batches (the rest of the worker's CPU is the framework's and the consumer's)",
            registry=r,
        )
        self.stream_agent_records = Counter(
            "vexnudge_stream_agent_records_total",
            "Records the stream agent handled (the divisor of its CPU time)",
            registry=r,
        )
        self.students = Gauge("vexnudge_active_students", "Students with state on this worker", registry=r)
        self.late_events = Counter(
            "vexnudge_late_events_total",
            "Events that arrived later than REORDER_WINDOW_S behind their student's latest "
            "(analysed in arrival order and flagged late)",
            registry=r,
        )
        self.sessions_dropped = Counter(
            "vexnudge_state_sessions_dropped_total",
            "Sessions dropped from a student's state to keep it "
            "bounded (session_cap: MAX_SESSIONS_PER_STUDENT, state_size: STUDENT_STATE_MAX_BYTES)",
            ["reason"],
            registry=r,
        )
        self.lag = Gauge("vexnudge_consumer_lag", "Records behind the end of a topic", ["topic"], registry=r)
        self.nudges = Counter("vexnudge_nudges_total", "Nudge outcomes", ["status"], registry=r)
        self.model_seconds = Histogram(
            "vexnudge_model_call_seconds", "Model call latency", buckets=_LATENCY_BUCKETS, registry=r
        )
        self.model_failures = Counter("vexnudge_model_failures_total", "Failed model calls", ["kind"], registry=r)
        self.nudge_seconds = Histogram(
            "vexnudge_nudge_latency_seconds", "Trigger to stored message", buckets=_LATENCY_BUCKETS, registry=r
        )

        # Outputs that failed to publish and records a sink refused: counted here and
        # reported by /healthz (``degraded``) with the counts since start, never only logged.
        self.publish_failures = Counter(
            "vexnudge_publish_failures_total",
            "Records that could not be published (the send raised or the broker refused the delivery)",
            ["topic"],
            registry=r,
        )
        self.sink_dead_letters = Counter(
            "vexnudge_sink_dead_letters_total",
            "Records a sink refused for their content, dead-lettered (the lane went on)",
            ["sink", "reason"],
            registry=r,
        )
        self.failures_since_start: dict[str, dict[str, int]] = {"publish_failures": {}, "sink_dead_letters": {}}

    def publish_failed(self, topic: str, records: int = 1) -> None:
        """``records`` of ``topic`` (its name without the prefix) failed to publish."""
        self.publish_failures.labels(topic).inc(records)
        self._tally("publish_failures", topic, records)

    def sink_dead_lettered(self, sink: str, reason: str) -> None:
        """A record ``sink`` refused was dead-lettered under ``reason``."""
        self.sink_dead_letters.labels(sink, reason).inc()
        self._tally("sink_dead_letters", f"{sink}:{reason}", 1)

    def _tally(self, kind: str, key: str, n: int) -> None:
        counts = self.failures_since_start[kind]
        counts[key] = counts.get(key, 0) + n

    def degraded(self) -> dict[str, dict[str, int]]:
        """The failure counts since start that make ``/healthz`` say ``degraded`` (empty: none)."""
        return {kind: dict(counts) for kind, counts in self.failures_since_start.items() if counts}

    def render(self) -> bytes:
        """The Prometheus text exposition."""
        return generate_latest(self.registry)
