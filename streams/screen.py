"""The hostile-line screen: checks 7-9 of the ingest rules (fixtures README §1b).

Pure.  A line that passed the format checks (1-5) is screened here before it
is accepted: ``too_large`` (longer than ``raw_max_bytes``), ``bad_field``
(``studentID``, ``sessionID`` or ``eventType`` holding a control character
or longer than :data:`FIELD_MAX_CHARS` after trimming) and
``future_timestamp`` (an event time more than ``clock_skew_max_s`` after the
line's ``received_at`` or, without one, after the live worker's clock).
These three rank after ``duplicate_id``, which only the adapter can judge, so
a verdict here is *deferred*: the adapter reports a duplicate first.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from topology.settings import default

#: Longest ``studentID`` / ``sessionID`` / ``eventType`` (after trimming).
FIELD_MAX_CHARS = 128
#: Default line limit (RAW_MAX_BYTES): 1 MiB (the broker's default record limit)
#: minus 1 KiB of record overhead (batch header, key, headers).
DEFAULT_RAW_MAX_BYTES: int = default("raw_max_bytes")
#: Default CLOCK_SKEW_MAX_S.
DEFAULT_CLOCK_SKEW_MAX_S: float = default("clock_skew_max_s")

_SCREENED_FIELDS = ("studentID", "sessionID", "eventType")
_CONTROL = re.compile("[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class Limits:
    """The screen's limits (built from the settings by adapters).

    :ivar raw_max_bytes: longest accepted line, in bytes.
    :ivar clock_skew_max_s: how far an event time may lie after its receive time.
    """

    raw_max_bytes: int = DEFAULT_RAW_MAX_BYTES
    clock_skew_max_s: float = DEFAULT_CLOCK_SKEW_MAX_S

    @classmethod
    def from_settings(cls, settings: Any) -> Limits:
        """Build from :class:`topology.settings.Settings` (duck-typed: stays pure)."""
        return cls(raw_max_bytes=settings.raw_max_bytes, clock_skew_max_s=settings.clock_skew_max_s)


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class Verdict:
    """Why the screen refuses a line: a ``RejectReason`` value and its detail."""

    reason: str
    detail: str


def too_large(size: int, limits: Limits) -> Verdict | None:
    """Check 7: the line's length in bytes."""
    if size > limits.raw_max_bytes:
        return Verdict("too_large", f"the line is {size} bytes, over the limit of {limits.raw_max_bytes}")
    return None


def bad_field(payload: dict[str, Any]) -> Verdict | None:
    """Check 8: the identifying fields (already known to be non-blank strings)."""
    for name in _SCREENED_FIELDS:
        value: str = payload[name]
        found = _CONTROL.search(value)
        if found is not None:
            return Verdict("bad_field", f"{name} holds the control character U+{ord(found.group()):04X}")
        if len(value) > FIELD_MAX_CHARS and len(value.strip()) > FIELD_MAX_CHARS:
            return Verdict("bad_field", f"{name} is {len(value.strip())} characters long (at most {FIELD_MAX_CHARS})")
    return None


def future_timestamp(ts: float, received: datetime | None, now: float | None, limits: Limits) -> Verdict | None:
    """Check 9: the event time against the receive time, else the live clock.

    :param received: the line's parsed ``received_at`` (None when absent or not a time).
    :param now: the live worker's clock; None in a replay, which then accepts the line.
    """
    reference = received.timestamp() if received is not None else now
    if reference is None or ts - reference <= limits.clock_skew_max_s:
        return None
    against = "its received_at" if received is not None else "the worker's clock"
    return Verdict(
        "future_timestamp",
        f"the event time is {ts - reference:.0f} s after {against} (at most {limits.clock_skew_max_s:.0f} s)",
    )


def bounded(value: str | None) -> str | None:
    """``value`` when it may serve as a record key or field (at most
    :data:`FIELD_MAX_CHARS` characters), else None: a dead letter of a hostile
    line never carries its oversize identifiers outside ``original``."""
    return value if value is None or len(value) <= FIELD_MAX_CHARS else None


# --- side fields of an accepted event: bounded, so no one line can swell the state ---

#: A line this short cannot hold an oversize side field.
SMALL_LINE = 16_384
#: Longest kept ``errorMessage`` (characters; longer ones are cut, marked with "…").
ERROR_MAX_CHARS = 1000
#: Largest kept ``playgroundData.parameters`` / ``blockEventData`` (JSON bytes).
MAPPING_MAX_CHARS = 4096
_TIME_MAX_CHARS = 64


def label_text(value: object) -> str | None:
    """A name-like string (``playground``, ``classCode``): kept when at most
    :data:`FIELD_MAX_CHARS` long, else replaced by ``~`` and a digest of it, so
    equal names stay equal (a playground stretch is still one stretch) and
    nothing downstream holds the long text."""
    if not isinstance(value, str):
        return None
    if len(value) <= FIELD_MAX_CHARS:
        return value
    return "~" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def clipped_text(value: object, limit: int = ERROR_MAX_CHARS) -> str | None:
    """A free-text string cut to ``limit`` characters (the cut marked with "…")."""
    if not isinstance(value, str):
        return None
    return value if len(value) <= limit else value[: limit - 1] + "…"


def short_text(value: object) -> str | None:
    """A timestamp-like string; one too long to be a timestamp is dropped."""
    return value if isinstance(value, str) and len(value) <= _TIME_MAX_CHARS else None


def small_mapping(value: object) -> dict[str, Any] | None:
    """A decoded mapping kept only when its JSON form is at most
    :data:`MAPPING_MAX_CHARS` bytes long (checked on long lines only)."""
    if not isinstance(value, dict):
        return None
    try:
        size = len(orjson.dumps(value))
    except orjson.JSONEncodeError:  # nested deeper than orjson writes: not kept
        return None
    return value if size <= MAPPING_MAX_CHARS else None
