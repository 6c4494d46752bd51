"""Signed, expiring tokens: student tokens and board tokens (pure; stdlib only).

A student token proves "whoever holds this may read and write student S's chat
until time T".  Format: ``v1.<payload>.<signature>`` where ``payload`` is the
url-safe base64 (no padding) of the compact JSON ``{"exp": epoch, "iat": epoch,
"s": key}`` and ``signature`` is the url-safe base64 of HMAC-SHA256(secret,
``v1.<payload>``).  A board token (``b1.<payload>.<signature>``, payload
``{"exp", "iat", "n": nonce}``) opens the teacher board's stream for a few
minutes; it is signed with a key derived from the admin token, so neither kind
can stand in for the other.

Invariants:
- decoding is strict: ASCII only, the url-safe alphabet without padding, and
  each part must re-encode to exactly the text given (no malleable padding or
  trailing bits, nothing appended); anything else is ``token_malformed``;
- verification recomputes the MAC and compares in constant time before it
  parses anything the holder could have chosen;
- a token's lifetime (``exp - iat``) is at most ``max_ttl_s``, checked when it
  is signed and again when it is verified (a token without ``iat``, signed
  before the field existed, must not have more than ``max_ttl_s`` left);
- the student key is canonical (stripped, lower-cased) when signed;
- expiry is checked against a clock handed in (``now``), never read here.

The payload is signed, not encrypted: the student page reads its own key
from it.  Keep tokens out of logs.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass
from enum import StrEnum

VERSION = "v1"
BOARD_VERSION = "b1"
_TTL_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE)
_TTL_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_B64_RE = re.compile(r"[A-Za-z0-9_-]+")
MAX_TOKEN_CHARS = 1024
MIN_SECRET_BYTES = 32
MAKE_SECRET = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
_MAC_BYTES = hashlib.sha256().digest_size
_BOARD_KEY_LABEL = b"vexnudge board token v1"


class TokenProblem(StrEnum):
    """Why a token was refused (the JSON error code the gateway returns)."""

    MISSING = "token_missing"
    MALFORMED = "token_malformed"
    BAD_SIGNATURE = "token_bad_signature"
    EXPIRED = "token_expired"
    TOO_LONG_LIVED = "token_ttl_too_long"


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


@dataclass(frozen=True, slots=True)
class BoardClaims:
    """What a valid board token grants: the board stream, until ``expires_at``."""

    nonce: str
    expires_at: int


def weak_secret(name: str, value: str | bytes | None) -> str | None:
    """Why ``value`` will not do as the secret ``name``, or ``None`` when it will.

    A secret must be at least :data:`MIN_SECRET_BYTES` bytes: a short HMAC key
    is recovered from one signed link by brute force.
    """
    raw = value.encode() if isinstance(value, str) else (value or b"")
    if not raw.strip():
        return f"{name} is not set"
    if len(raw) < MIN_SECRET_BYTES:
        size = len(raw)
        return f"{name} is {size} byte{'' if size == 1 else 's'} long; it must be at least {MIN_SECRET_BYTES}"
    return None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    """Strict url-safe base64 without padding: the text must be the canonical encoding.

    :raises TokenError: anything else (``token_malformed``).
    """
    if not _B64_RE.fullmatch(text) or len(text) % 4 == 1:
        raise TokenError(TokenProblem.MALFORMED)
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, binascii.Error):
        raise TokenError(TokenProblem.MALFORMED) from None
    if _b64(data) != text:  # non-zero trailing bits: another text for the same bytes
        raise TokenError(TokenProblem.MALFORMED)
    return data


def _mac(secret: bytes, signed_part: str) -> bytes:
    return hmac.new(secret, signed_part.encode("ascii"), hashlib.sha256).digest()


def _board_key(admin_token: bytes) -> bytes:
    return hmac.new(admin_token, _BOARD_KEY_LABEL, hashlib.sha256).digest()


def canonical_key(student_id: str) -> str:
    """The student key used everywhere: ``studentID`` stripped and lower-cased."""
    return student_id.strip().lower()


def _sign(secret: bytes, version: str, claims: dict[str, object]) -> str:
    body = json.dumps(claims, separators=(",", ":"), sort_keys=True)
    signed_part = f"{version}.{_b64(body.encode())}"
    return f"{signed_part}.{_b64(_mac(secret, signed_part))}"


def _check_ttl(ttl_s: float, max_ttl_s: float | None) -> None:
    if ttl_s <= 0:
        raise ValueError("the token lifetime must be positive")
    if max_ttl_s is not None and ttl_s > max_ttl_s:
        raise ValueError(
            f"the token lifetime {ttl_s:.0f} s is longer than the maximum {max_ttl_s:.0f} s (TOKEN_MAX_TTL_S)"
        )


def issue(secret: bytes, student_id: str, *, ttl_s: float, now: float, max_ttl_s: float | None = None) -> str:
    """A token for ``student_id`` valid for ``ttl_s`` seconds from ``now``.

    :raises ValueError: empty secret, empty student id, a non-positive ttl or
        one above ``max_ttl_s``.
    """
    key = canonical_key(student_id)
    if not secret:
        raise ValueError("the token secret is empty")
    if not key:
        raise ValueError("the student id is empty")
    _check_ttl(ttl_s, max_ttl_s)
    return _sign(secret, VERSION, {"s": key, "iat": int(now), "exp": int(now + ttl_s)})


def verify(secret: bytes, token: str | None, *, now: float, max_ttl_s: float | None = None) -> StudentClaims:
    """The claims of a valid, unexpired student token.

    :raises TokenError: missing, malformed, wrong signature, expired or
        signed for longer than ``max_ttl_s``.
    """
    data = _verified_payload(secret, VERSION, token)
    key = data.get("s")
    if not isinstance(key, str) or not key or key != canonical_key(key):
        raise TokenError(TokenProblem.MALFORMED)
    return StudentClaims(student_key=key, expires_at=_check_times(data, now, max_ttl_s))


def issue_board(admin_token: bytes, *, ttl_s: float, now: float) -> str:
    """A board token (opens the board's stream) valid for ``ttl_s`` seconds."""
    if not admin_token:
        raise ValueError("the admin token is empty")
    _check_ttl(ttl_s, None)
    claims = {"n": secrets.token_urlsafe(12), "iat": int(now), "exp": int(now + ttl_s)}
    return _sign(_board_key(admin_token), BOARD_VERSION, claims)


def verify_board(admin_token: bytes, token: str | None, *, now: float, max_ttl_s: float) -> BoardClaims:
    """The claims of a valid, unexpired board token.  :raises TokenError: as :func:`verify`."""
    data = _verified_payload(_board_key(admin_token), BOARD_VERSION, token)
    nonce = data.get("n")
    if not isinstance(nonce, str) or not nonce:
        raise TokenError(TokenProblem.MALFORMED)
    return BoardClaims(nonce=nonce, expires_at=_check_times(data, now, max_ttl_s))


def _verified_payload(secret: bytes, version: str, token: str | None) -> dict[str, object]:
    """The JSON object a token of ``version`` signed with ``secret`` carries."""
    if not token:
        raise TokenError(TokenProblem.MISSING)
    if len(token) > MAX_TOKEN_CHARS or not token.isascii():
        raise TokenError(TokenProblem.MALFORMED)
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != version:
        raise TokenError(TokenProblem.MALFORMED)
    given = _unb64(parts[2])
    if len(given) != _MAC_BYTES:
        raise TokenError(TokenProblem.MALFORMED)
    if not hmac.compare_digest(given, _mac(secret, f"{parts[0]}.{parts[1]}")):
        raise TokenError(TokenProblem.BAD_SIGNATURE)
    try:
        data = json.loads(_unb64(parts[1]))
    except (ValueError, UnicodeError):
        raise TokenError(TokenProblem.MALFORMED) from None
    if not isinstance(data, dict):
        raise TokenError(TokenProblem.MALFORMED)
    return data


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_times(data: dict[str, object], now: float, max_ttl_s: float | None) -> int:
    """``exp`` once it is checked against ``now`` and the maximum lifetime."""
    exp, iat = data.get("exp"), data.get("iat")
    if not _is_int(exp) or (iat is not None and not _is_int(iat)):
        raise TokenError(TokenProblem.MALFORMED)
    assert isinstance(exp, int)
    if exp <= now:
        raise TokenError(TokenProblem.EXPIRED)
    if max_ttl_s is not None:
        lifetime = exp - iat if isinstance(iat, int) else exp - now
        if lifetime > max_ttl_s or exp - now > max_ttl_s:
            raise TokenError(TokenProblem.TOO_LONG_LIVED)
    return exp


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
