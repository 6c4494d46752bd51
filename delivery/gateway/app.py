"""The gateway's aiohttp application: routes, pages, health and metrics.

Routes (see docs/gateway.md):

- ``GET  /v1/students/{student}/stream``   SSE, student token
- ``POST /v1/students/{student}/messages`` a question, student token
- ``POST /admin/tick``                     one evaluation pass, admin token
- ``POST /admin/board/token``              a short-lived board token, admin token
- ``GET  /admin/board/stream``             SSE for the teacher board, board token (or admin token)
- ``GET  /student``, ``GET /board``        the pages; ``/static/*`` their assets
- ``GET  /healthz``, ``GET /metrics``

:func:`build_app` refuses settings without ``TOKEN_SECRET`` or ``ADMIN_TOKEN``,
or with one shorter than 32 bytes.  A connection must send its request head
within ``GATEWAY_REQUEST_TIMEOUT_S`` of opening (or of its previous
response): aiohttp's keep-alive timer, which since aiohttp 3.14.5 also runs
before the first request, closes it otherwise (a half-sent head is never
held open).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from delivery.gateway import admin, board, questions, state, store, student, tokens
from delivery.gateway.auth import Authenticator
from delivery.gateway.caps import QuestionLimiter, StreamSlots
from delivery.gateway.metrics import GatewayMetrics
from delivery.gateway.payloads import Outgoing
from delivery.gateway.pubsub import Hub
from topology.settings import Settings

log = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent / "static"
_PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "style-src 'self'; script-src 'self'; frame-ancestors 'none'",
}


class ConfigurationError(ValueError):
    """The gateway cannot start with these settings; the message says the fix."""


def secrets_of(settings: Settings) -> tuple[bytes, str]:
    """The token secret and the admin token, or a clear refusal (missing or short)."""
    problems = [
        tokens.weak_secret(name, value.get_secret_value() if value is not None else None)
        for name, value in (("TOKEN_SECRET", settings.token_secret), ("ADMIN_TOKEN", settings.admin_token))
    ]
    found = [p for p in problems if p is not None]
    if found:
        raise ConfigurationError(
            f"{'; '.join(found)}. Each must be at least {tokens.MIN_SECRET_BYTES} random bytes "
            "(a short TOKEN_SECRET is guessed from a single student link; students' links are "
            "signed with it and the admin routes need ADMIN_TOKEN). "
            f"Make one with: {tokens.MAKE_SECRET}"
        )
    assert settings.token_secret is not None and settings.admin_token is not None
    return settings.token_secret.get_secret_value().encode(), settings.admin_token.get_secret_value()


def build_app(settings: Settings, *, with_clients: bool = True) -> web.Application:
    """The gateway app.  ``with_clients=False`` skips Kafka and Postgres (unit tests)."""
    secret, admin_token = secrets_of(settings)
    metrics = GatewayMetrics()
    auth = Authenticator(
        secret, admin_token, metrics, max_ttl_s=settings.token_max_ttl_s, board_ttl_s=settings.board_token_ttl_s
    )
    gw = state.Gateway(
        settings=settings,
        metrics=metrics,
        auth=auth,
        hub=Hub[Outgoing](settings.sse_client_queue, on_drop=lambda sub: metrics.dropped.labels(sub.kind).inc()),
        slots=StreamSlots(
            settings.sse_max_streams_per_token,
            settings.sse_max_streams,
            on_evict=lambda slot: metrics.limited.labels("stream_evicted").inc(),
        ),
        questions=QuestionLimiter(settings.question_rate_limit),
    )
    app = web.Application(
        client_max_size=64 * 1024, handler_args={"keepalive_timeout": settings.gateway_request_timeout_s}
    )
    app[state.GATEWAY] = gw
    app[state.STREAMS] = set()
    if with_clients:
        app.cleanup_ctx.append(state.clients_ctx)
        app.cleanup_ctx.append(questions.sweep_ctx)
    app.on_shutdown.append(state.on_shutdown)
    app.router.add_get("/v1/students/{student}/stream", student.stream)
    app.router.add_post("/v1/students/{student}/messages", questions.post_message)
    app.router.add_post("/admin/tick", admin.tick)
    app.router.add_post("/admin/board/token", board.board_token)
    app.router.add_get("/admin/board/stream", board.board_stream)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_view)
    app.router.add_get("/student", page("student.html"))
    app.router.add_get("/board", page("board.html"))
    app.router.add_get("/", page("index.html"))
    app.router.add_static("/static/", STATIC, append_version=False)
    return app


def page(name: str) -> Callable[[web.Request], Awaitable[web.FileResponse]]:
    """A handler serving one static HTML page with strict headers."""
    path = STATIC / name

    async def handler(request: web.Request) -> web.FileResponse:
        return web.FileResponse(path, headers=_PAGE_HEADERS)

    return handler


async def healthz(request: web.Request) -> web.Response:
    """200 when the Kafka consumer runs and Postgres answers, else 503."""
    gw = request.app[state.GATEWAY]
    kafka = gw.consumer is not None and gw.consumer.running
    try:
        db = gw.pool is not None and await store.ping(gw.pool)
    except Exception:  # noqa: BLE001 - any failure means "not reachable"
        db = False
    ok = kafka and db
    body = {
        "status": "ok" if ok else "unavailable",
        "kafka_consumer": kafka,
        "database": db,
        "open_streams": len(request.app[state.STREAMS]),
    }
    return web.json_response(body, status=200 if ok else 503)


async def metrics_view(request: web.Request) -> web.Response:
    gw = request.app[state.GATEWAY]
    return web.Response(body=gw.metrics.render(), headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})


def run(settings: Settings) -> None:
    """Serve until SIGINT/SIGTERM (``vexnudge gateway``)."""
    app = build_app(settings)
    log.info("gateway: starting on http://%s:%d", settings.gateway_host, settings.gateway_port)
    web.run_app(
        app,
        host=settings.gateway_host,
        port=settings.gateway_port,
        shutdown_timeout=5.0,
        access_log=None,
        print=None,
        handle_signals=True,
    )
