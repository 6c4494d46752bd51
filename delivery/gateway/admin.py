"""Admin routes (admin token): ``POST /admin/tick``.

The tick runs one evaluation pass for a (student, session) by hand: it loads
the session's stored events, evaluates them with the pipeline's own engine
and nudge policy up to the wall clock (:func:`streams.local.evaluate_session`;
so an idle student's inactive alert is included), and hands each
resulting feedback request to the feedback service, which is idempotent by
trigger id.  It answers what it detected and what it pushed; ``pushed``
holds only messages this call created, so a nudge the pipeline already sent
is neither generated nor listed again.  While the database (or the broker)
cannot be reached it answers 503 with a JSON error, never a 500.

The feedback service is the gateway's one service (:attr:`Gateway.service`,
built with the app's clients by :func:`feedback.factory.build_service`).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import asyncpg
import orjson
from aiohttp import web
from aiokafka.errors import KafkaError

from delivery.gateway.auth import json_error
from delivery.gateway.payloads import iso
from delivery.gateway.state import GATEWAY
from delivery.gateway.tokens import canonical_key
from topology.schemas.base import to_jsonable
from topology.schemas.feedback import FeedbackMessage

log = logging.getLogger(__name__)

#: Failures that mean a dependency is unreachable (answered 503), not a bug (500).
_UNAVAILABLE = (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError, KafkaError)


async def tick(request: web.Request) -> web.Response:
    gw = request.app[GATEWAY]
    gw.auth.admin(request)
    student_id, session_id = await _tick_body(request)
    from delivery.repo import events as repo_events
    from streams.local import evaluate_session

    key = canonical_key(student_id)
    try:
        events = await repo_events.session_events(gw.need_pool(), key, session_id)
        evaluation = evaluate_session(events, gw.settings, now=time.time())
        service = gw.need_service()
        pushed: list[dict[str, Any]] = []
        for feedback_request in evaluation.requests:
            result = await service.handle(feedback_request)
            if result.generated and result.message is not None:
                pushed.append(_pushed(result.message))
    except _UNAVAILABLE as exc:  # the database (or broker) is down: say so, never a 500
        log.warning("admin tick %s/%s: %s: %s", key, session_id, type(exc).__name__, exc)
        raise json_error(
            web.HTTPServiceUnavailable,
            "unavailable",
            "the database or the broker cannot be reached right now; try again (a tick is idempotent)",
            {"Retry-After": "5"},
        ) from None
    detected = [to_jsonable(trigger) for trigger in evaluation.triggers]
    log.info(
        "admin tick %s/%s: %d events, %d detected, %d pushed", key, session_id, len(events), len(detected), len(pushed)
    )
    return web.json_response(
        {"student_key": key, "session_id": session_id, "events": len(events), "detected": detected, "pushed": pushed}
    )


async def _tick_body(request: web.Request) -> tuple[str, str]:
    try:
        body = orjson.loads(await request.read())
    except orjson.JSONDecodeError:
        raise json_error(web.HTTPBadRequest, "invalid_json", "the body must be a JSON object") from None
    if not isinstance(body, dict):
        raise json_error(web.HTTPBadRequest, "invalid_json", "the body must be a JSON object")
    values = []
    for name in ("student_id", "session_id"):
        value = body.get(name)
        if not isinstance(value, str) or not value.strip():
            raise json_error(
                web.HTTPUnprocessableEntity, f"{name}_invalid", f"'{name}' is required: a non-empty string"
            )
        values.append(value.strip())
    return values[0], values[1]


def _pushed(message: FeedbackMessage) -> dict[str, Any]:
    return {
        "message_id": message.message_id,
        "response_id": message.response_id,
        "origin": message.origin.value,
        "text": message.text,
        "trigger_id": message.trigger_id,
        "trigger_type": message.trigger_type,
        "feedback_classes": list(message.feedback_classes),
        "model": message.model,
        "created_at": iso(message.created_at),
    }
