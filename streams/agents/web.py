"""The worker's web endpoints: ``/metrics`` (Prometheus) and ``/healthz``.

``/healthz`` answers 200 while the worker runs: ``status`` is ``ok``, or
``degraded`` once an output failed to publish or a sink dead-lettered a
record since start (``degraded`` holds those counts).  The worker goes on in
both cases, so a liveness probe must not restart it for that; alert on the
status or on ``vexnudge_publish_failures_total`` /
``vexnudge_sink_dead_letters_total`` instead.
"""

from __future__ import annotations

from streams.agents.pipeline import Pipeline
from topology.seam.offsets import partition_offsets


def register(p: Pipeline) -> None:
    @p.app.page("/metrics")
    async def metrics(web, request):  # type: ignore[no-untyped-def]
        return web.bytes(p.metrics.render(), content_type="text/plain; version=0.0.4")

    @p.app.page("/debug/offsets")
    async def offsets(web, request):  # type: ignore[no-untyped-def]
        return web.json(consumer_offsets(p))

    @p.app.page("/healthz")
    async def healthz(web, request):  # type: ignore[no-untyped-def]
        return web.json(health(p))


def health(p: Pipeline) -> dict[str, object]:
    """The ``/healthz`` body: ``ok`` or ``degraded`` with the failure counts since start."""
    degraded = p.metrics.degraded()
    return {
        "status": "degraded" if degraded else "ok",
        "app_id": p.settings.app_id,
        "clock": p.settings.clock_mode,
        "degraded": degraded,
    }


def consumer_offsets(p: Pipeline) -> dict[str, dict[str, object]]:
    """Per partition: committed, read and pending-ack offsets (for diagnosing lag)."""
    offsets = partition_offsets(p.app.consumer)
    out: dict[str, dict[str, object]] = {}
    for tp in sorted(offsets):
        now = offsets[tp]
        out[f"{tp.topic}[{tp.partition}]"] = {
            "committed": now.committed,
            "read": now.read,
            "acked_pending": len(now.acked),
            "acked_min": min(now.acked) if now.acked else None,
            "gaps": len(now.gaps or ()),
        }
    return out
