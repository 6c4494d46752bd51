"""Signed, expiring student tokens (pure; stdlib only).

A token proves "whoever holds this may read and write student S's chat until
time T".  Format: ``v1.<payload>.<signature>`` where ``payload`` is the
url-safe base64 (no padding) of the compact JSON ``{"s": key, "exp": epoch}``
and ``signature`` is the url-safe base64 of HMAC-SHA256(secret, ``v1.<payload>``).

Invariants:
- the student key is canonical (stripped, lower-cased) when signed;
- verification recomputes the MAC and compares in constant time before it
  parses anything the holder could have chosen;
- expiry is checked against a clock handed in (``now``), never read here.

The payload is signed, not encrypted: the student page reads its own key
from it.  Keep tokens out of logs.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from enum import StrEnum

VERSION = "v1"
_TTL_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE)
_TTL_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_TOKEN_CHARS = 1024


class TokenProblem(StrEnum):
    """Why a token was refused (the JSON error code the gateway returns)."""

    MISSING = "token_missing"
    MALFORMED = "token_malformed"
    BAD_SIGNATURE = "token_bad_signature"
    EXPIRED = "token_expired"


class TokenError(ValueError):
    """A refused token; ``problem`` says why."""

    def __init__(self, problem: TokenProblem) -> None:
        super().__init__(problem.value)
        self.problem = problem


@dataclass(frozen=True, slots=True)
class StudentClaims:
    """What a valid token grants: one student, until ``expires_at``."""

    student_key: str
    expires_at: int


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(secret: bytes, signed_part: str) -> bytes:
    return hmac.new(secret, signed_part.encode("ascii"), hashlib.sha256).digest()


def canonical_key(student_id: str) -> str:
    """The student key used everywhere: ``studentID`` stripped and lower-cased."""
    return student_id.strip().lower()


def issue(secret: bytes, student_id: str, *, ttl_s: float, now: float) -> str:
    """A token for ``student_id`` valid for ``ttl_s`` seconds from ``now``.

    :raises ValueError: empty secret, empty student id or a non-positive ttl.
    """
    key = canonical_key(student_id)
    if not secret:
        raise ValueError("the token secret is empty")
    if not key:
        raise ValueError("the student id is empty")
    if ttl_s <= 0:
        raise ValueError("the token lifetime must be positive")
    body = json.dumps({"s": key, "exp": int(now + ttl_s)}, separators=(",", ":"), sort_keys=True)
    signed_part = f"{VERSION}.{_b64(body.encode())}"
    return f"{signed_part}.{_b64(_mac(secret, signed_part))}"


def verify(secret: bytes, token: str | None, *, now: float) -> StudentClaims:
    """The claims of a valid, unexpired token.

    :raises TokenError: missing, malformed, wrong signature or expired.
    """
    if not token:
        raise TokenError(TokenProblem.MISSING)
    parts = token.split(".")
    if len(token) > MAX_TOKEN_CHARS or len(parts) != 3 or parts[0] != VERSION:
        raise TokenError(TokenProblem.MALFORMED)
    try:
        given = _unb64(parts[2])
    except (ValueError, UnicodeEncodeError):
        raise TokenError(TokenProblem.MALFORMED) from None
    expected = _mac(secret, f"{parts[0]}.{parts[1]}")
    if not hmac.compare_digest(given, expected):
        raise TokenError(TokenProblem.BAD_SIGNATURE)
    claims = _parse_payload(parts[1])
    if claims.expires_at <= now:
        raise TokenError(TokenProblem.EXPIRED)
    return claims


def _parse_payload(text: str) -> StudentClaims:
    try:
        data = json.loads(_unb64(text))
    except (ValueError, UnicodeError):
        raise TokenError(TokenProblem.MALFORMED) from None
    if not isinstance(data, dict):
        raise TokenError(TokenProblem.MALFORMED)
    key, exp = data.get("s"), data.get("exp")
    if not isinstance(key, str) or not key or not isinstance(exp, int) or isinstance(exp, bool):
        raise TokenError(TokenProblem.MALFORMED)
    return StudentClaims(student_key=key, expires_at=exp)


def parse_ttl(text: str) -> float:
    """``"12h"`` → 43200.0; accepts s, m, h, d suffixes or plain seconds.

    :raises ValueError: not a positive duration.
    """
    match = _TTL_RE.match(text)
    if not match:
        raise ValueError(f"not a duration: {text!r} (use e.g. 90s, 30m, 12h, 7d)")
    seconds = float(match.group(1)) * _TTL_UNITS[match.group(2).lower()]
    if seconds <= 0:
        raise ValueError(f"the duration must be positive: {text!r}")
    return seconds
