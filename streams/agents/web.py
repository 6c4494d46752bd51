"""The worker's web endpoints: ``/metrics`` (Prometheus) and ``/healthz``."""

from __future__ import annotations

from topology.app import Pipeline


def register(p: Pipeline) -> None:
    @p.app.page("/metrics")
    async def metrics(web, request):  # type: ignore[no-untyped-def]
        return web.bytes(p.metrics.render(), content_type="text/plain; version=0.0.4")

    @p.app.page("/debug/offsets")
    async def offsets(web, request):  # type: ignore[no-untyped-def]
        return web.json(consumer_offsets(p))

    @p.app.page("/healthz")
    async def healthz(web, request):  # type: ignore[no-untyped-def]
        return web.json({"status": "ok", "app_id": p.settings.app_id, "clock": p.settings.clock_mode})


def consumer_offsets(p: Pipeline) -> dict[str, dict[str, object]]:
    """Per partition: committed, read and pending-ack offsets (for diagnosing lag)."""
    consumer = p.app.consumer
    out: dict[str, dict[str, object]] = {}
    for tp in sorted(consumer.assignment()):
        acked = consumer._acked.get(tp, [])  # noqa: SLF001 - read-only diagnostics
        out[f"{tp.topic}[{tp.partition}]"] = {
            "committed": consumer._committed_offset.get(tp),  # noqa: SLF001
            "read": consumer._read_offset.get(tp),  # noqa: SLF001
            "acked_pending": len(acked), "acked_min": min(acked) if acked else None,
            "gaps": len(consumer._gap.get(tp, ())),  # noqa: SLF001
        }
    return out
