"""Request authentication: student tokens, the admin token and board tokens.

- A student route needs a valid token (``Authorization: Bearer <token>`` or
  ``?token=`` for EventSource, which cannot set headers) whose student is the
  one in the path.  Missing, malformed, wrong-signature, expired or too
  long-lived → 401; a valid token for another student → 403.  The raw student
  id opens nothing.
- An admin route needs ``ADMIN_TOKEN`` as ``Authorization: Bearer``, compared
  in constant time; missing or wrong → 401.  The admin token is never taken
  from a query string (those end up in logs and browser history): a request
  that carries ``?admin_token=`` is refused with ``admin_token_in_query``.
- The board's stream takes the admin token (header) or a short-lived signed
  board token (``?board_token=``), minted by ``POST /admin/board/token``.

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
    tokens.TokenProblem.TOO_LONG_LIVED: "the token was signed for longer than the gateway allows "
    "(TOKEN_MAX_TTL_S); ask your teacher for a new link",
}
_IN_QUERY = (
    "the admin token is accepted only as an Authorization: Bearer header, never in an "
    "address; the board's stream takes a board token from POST /admin/board/token"
)


def json_error(
    status: type[web.HTTPException], code: str, detail: str, headers: dict[str, str] | None = None
) -> web.HTTPException:
    """An aiohttp HTTP exception with a JSON body."""
    text = orjson.dumps({"error": code, "detail": detail}).decode()
    return status(text=text, content_type="application/json", headers=headers)


def bearer(request: web.Request) -> str | None:
    """The ``Authorization: Bearer`` credential, if any."""
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


class Authenticator:
    """Checks student, admin and board credentials for one gateway.

    :param token_secret: the HMAC key of student tokens.
    :param admin_token: the admin bearer token (also the root of board tokens' key).
    :param max_ttl_s: the longest student token lifetime accepted.
    :param board_ttl_s: the lifetime of a board token.
    :param clock: epoch seconds (injected for tests).
    :raises ValueError: a secret shorter than :data:`tokens.MIN_SECRET_BYTES`.
    """

    def __init__(
        self,
        token_secret: bytes,
        admin_token: str,
        metrics: GatewayMetrics,
        *,
        max_ttl_s: float | None = None,
        board_ttl_s: float = 120.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        for name, value in (("TOKEN_SECRET", token_secret), ("ADMIN_TOKEN", admin_token)):
            problem = tokens.weak_secret(name, value)
            if problem is not None:
                raise ValueError(f"{problem}; make one with {tokens.MAKE_SECRET}")
        self._secret = token_secret
        self._admin = admin_token.encode()
        self._metrics = metrics
        self._max_ttl_s = max_ttl_s
        self.board_ttl_s = board_ttl_s
        self._clock = clock

    def _refuse(self, status: type[web.HTTPException], code: str, detail: str) -> web.HTTPException:
        self._metrics.auth_rejected.labels(code).inc()
        headers = {"WWW-Authenticate": 'Bearer realm="vexnudge"'} if status is web.HTTPUnauthorized else None
        return json_error(status, code, detail, headers)

    def student(self, request: web.Request, path_student: str) -> tokens.StudentClaims:
        """The claims of the request's token, which must be for ``path_student``."""
        raw = bearer(request) or request.query.get("token")
        try:
            claims = tokens.verify(self._secret, raw, now=self._clock(), max_ttl_s=self._max_ttl_s)
        except tokens.TokenError as exc:
            raise self._refuse(web.HTTPUnauthorized, exc.problem.value, _DETAILS[exc.problem]) from None
        if not hmac.compare_digest(
            claims.student_key.encode(), tokens.canonical_key(path_student).encode("utf-8", "replace")
        ):
            raise self._refuse(web.HTTPForbidden, "token_other_student", "this token is for another student")
        return claims

    def admin(self, request: web.Request) -> None:
        """Pass silently for the admin token in the Authorization header; refuse anything else."""
        if "admin_token" in request.query:
            raise self._refuse(web.HTTPUnauthorized, "admin_token_in_query", _IN_QUERY)
        raw = bearer(request)
        if not raw:
            raise self._refuse(
                web.HTTPUnauthorized, "admin_token_missing", "the admin token is required (Authorization: Bearer)"
            )
        if not hmac.compare_digest(raw.encode("utf-8", "replace"), self._admin):
            raise self._refuse(web.HTTPUnauthorized, "admin_token_invalid", "the admin token is not valid")

    def mint_board(self) -> tuple[str, int]:
        """A fresh board token and its expiry (call after :meth:`admin`)."""
        now = self._clock()
        token = tokens.issue_board(self._admin, ttl_s=self.board_ttl_s, now=now)
        return token, int(now + self.board_ttl_s)

    def board(self, request: web.Request) -> str:
        """Admit the board's stream; returns the key its stream cap counts under.

        The admin token (header) or a valid board token (``?board_token=``).
        """
        if "board_token" not in request.query or bearer(request) or "admin_token" in request.query:
            self.admin(request)
            return "board:admin"
        try:
            claims = tokens.verify_board(
                self._admin, request.query.get("board_token"), now=self._clock(), max_ttl_s=self.board_ttl_s
            )
        except tokens.TokenError as exc:
            code = f"board_{exc.problem.value}"
            raise self._refuse(
                web.HTTPUnauthorized,
                code,
                "the board token is not valid (expired?); the board page gets a new one from POST /admin/board/token",
            ) from None
        return f"board:{claims.nonce}"
