"""Request authentication: student tokens and the admin token.

- A student route needs a valid token (``Authorization: Bearer <token>`` or
  ``?token=`` for EventSource, which cannot set headers) whose student is the
  one in the path.  Missing, malformed, wrong-signature or expired → 401;
  a valid token for another student → 403.  The raw student id opens nothing.
- An admin route needs ``ADMIN_TOKEN`` (Bearer, or ``?admin_token=`` for the
  board's EventSource), compared in constant time; missing or wrong → 401.

Refusals are JSON ``{"error": code, "detail": text}`` raised as aiohttp HTTP
exceptions, and counted by reason.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable

import orjson
from aiohttp import web

from delivery.gateway import tokens
from delivery.gateway.metrics import GatewayMetrics

_DETAILS = {
    tokens.TokenProblem.MISSING: "a student token is required (Authorization: Bearer, or ?token=)",
    tokens.TokenProblem.MALFORMED: "the token is not a vexnudge student token",
    tokens.TokenProblem.BAD_SIGNATURE: "the token's signature does not match",
    tokens.TokenProblem.EXPIRED: "the token has expired; ask your teacher for a new link",
}


def json_error(status: type[web.HTTPException], code: str, detail: str,
               headers: dict[str, str] | None = None) -> web.HTTPException:
    """An aiohttp HTTP exception with a JSON body."""
    body = orjson.dumps({"error": code, "detail": detail})
    return status(body=body, content_type="application/json", headers=headers)


def bearer(request: web.Request) -> str | None:
    """The ``Authorization: Bearer`` credential, if any."""
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


class Authenticator:
    """Checks student and admin credentials for one gateway.

    :param token_secret: the HMAC key of student tokens.
    :param admin_token: the admin bearer token.
    :param clock: epoch seconds (injected for tests).
    """

    def __init__(self, token_secret: bytes, admin_token: str, metrics: GatewayMetrics,
                 clock: Callable[[], float] = time.time) -> None:
        if not token_secret or not admin_token:
            raise ValueError("both the token secret and the admin token are required")
        self._secret = token_secret
        self._admin = admin_token.encode()
        self._metrics = metrics
        self._clock = clock

    def _refuse(self, status: type[web.HTTPException], code: str, detail: str) -> web.HTTPException:
        self._metrics.auth_rejected.labels(code).inc()
        headers = {"WWW-Authenticate": 'Bearer realm="vexnudge"'} if status is web.HTTPUnauthorized else None
        return json_error(status, code, detail, headers)

    def student(self, request: web.Request, path_student: str) -> tokens.StudentClaims:
        """The claims of the request's token, which must be for ``path_student``."""
        raw = bearer(request) or request.query.get("token")
        try:
            claims = tokens.verify(self._secret, raw, now=self._clock())
        except tokens.TokenError as exc:
            raise self._refuse(web.HTTPUnauthorized, exc.problem.value, _DETAILS[exc.problem]) from None
        if not hmac.compare_digest(claims.student_key.encode(),
                                   tokens.canonical_key(path_student).encode()):
            raise self._refuse(web.HTTPForbidden, "token_other_student",
                               "this token is for another student")
        return claims

    def admin(self, request: web.Request) -> None:
        """Pass silently for the admin token; refuse anything else."""
        raw = bearer(request) or request.query.get("admin_token")
        if not raw:
            raise self._refuse(web.HTTPUnauthorized, "admin_token_missing",
                               "the admin token is required (Authorization: Bearer, or ?admin_token=)")
        if not hmac.compare_digest(raw.encode(), self._admin):
            raise self._refuse(web.HTTPUnauthorized, "admin_token_invalid", "the admin token is not valid")
