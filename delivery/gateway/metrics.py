"""Prometheus metrics of the gateway, on a registry owned by the app instance."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_PUSH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class GatewayMetrics:
    """Every metric the gateway exports at ``/metrics``."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.open_streams = Gauge("vexnudge_gateway_open_streams", "Open SSE streams", ["kind"], registry=r)
        self.pushed = Counter(
            "vexnudge_gateway_messages_pushed_total", "Frames written to clients (live)", ["event"], registry=r
        )
        self.replayed = Counter(
            "vexnudge_gateway_messages_replayed_total", "Messages replayed from Postgres on connect", registry=r
        )
        self.push_seconds = Histogram(
            "vexnudge_gateway_push_latency_seconds",
            "From the message's created_at to its write to a client",
            buckets=_PUSH_BUCKETS,
            registry=r,
        )
        self.auth_rejected = Counter("vexnudge_gateway_auth_rejected_total", "Refused requests", ["reason"], registry=r)
        self.dropped = Counter(
            "vexnudge_gateway_dropped_clients_total",
            "Streams ended because the client was too slow",
            ["kind"],
            registry=r,
        )
        self.consumed = Counter(
            "vexnudge_gateway_records_consumed_total", "Records read from Kafka", ["topic"], registry=r
        )
        self.bad_records = Counter(
            "vexnudge_gateway_bad_records_total", "Records that did not decode", ["topic"], registry=r
        )
        self.questions = Counter(
            "vexnudge_gateway_questions_total", "Student questions accepted", ["result"], registry=r
        )
        self.limited = Counter(
            "vexnudge_gateway_limited_total",
            "Requests refused or streams closed by a limit (streams_total, stream_evicted, "
            "question_rate, question_pending, request_timeout)",
            ["limit"],
            registry=r,
        )
        self.history_deferred = Counter(
            "vexnudge_gateway_history_deferred_total",
            "Streams that went live before their history could be read",
            registry=r,
        )
        self.republished = Counter(
            "vexnudge_gateway_questions_republished_total",
            "Stored questions published again by the sweep",
            ["result"],
            registry=r,
        )

    def render(self) -> bytes:
        """The Prometheus text exposition."""
        return generate_latest(self.registry)
