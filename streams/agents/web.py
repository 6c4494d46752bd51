"""The worker's web endpoints: ``/metrics`` (Prometheus) and ``/healthz``."""

from __future__ import annotations

from topology.app import Pipeline


def register(p: Pipeline) -> None:
    @p.app.page("/metrics")
    async def metrics(web, request):  # type: ignore[no-untyped-def]
        return web.bytes(p.metrics.render(), content_type="text/plain; version=0.0.4")

    @p.app.page("/healthz")
    async def healthz(web, request):  # type: ignore[no-untyped-def]
        return web.json({"status": "ok", "app_id": p.settings.app_id, "clock": p.settings.clock_mode})
