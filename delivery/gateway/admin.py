"""Admin routes (admin token): ``POST /admin/tick``.

The tick runs one evaluation pass for a (student, session) from the event
store with the same engine as the pipeline, and hands each feedback request
the nudge policy acts on to the feedback service (idempotent by trigger id).
"""

from __future__ import annotations

from aiohttp import web

from delivery.gateway.auth import json_error
from delivery.gateway.state import GATEWAY


async def tick(request: web.Request) -> web.Response:
    request.app[GATEWAY].auth.admin(request)
    raise json_error(web.HTTPNotImplemented, "tick_unavailable",
                     "the evaluation pass is not wired into this build yet")
