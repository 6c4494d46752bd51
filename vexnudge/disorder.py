"""Arrival disorder on demand: a recorded file in a seeded, bounded arrival order.

Classroom Wi-Fi delivers a student's telemetry late and out of order, and browsers
resend.  :func:`arrival_order` reproduces that from a file, deterministically for a
seed, so a disordered replay (``vexnudge produce --shuffle-within``, the broker tests)
can be repeated exactly.  Pure: no clock, no I/O, no global random state.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from streams.ingest import decode_line
from topology.schemas import NormalizedEvent


@dataclass(frozen=True, order=True)
class _Arrival:
    """One send: ordered by arrival time, then file position, then original before copy."""

    at: float
    index: int
    copy: int
    line: bytes


def arrival_order(lines: Sequence[bytes], within_s: float, seed: int, resend: float = 0.0) -> list[tuple[int, bytes]]:
    """The order in which ``lines`` arrive when each is delayed at random within ``within_s``.

    The rule:

    - A line's *time* is its event time as ingest reads it (``decode_line(line).ts``).
      A line that does not decode (rejected or blank) takes the time of the closest
      decodable line before it, or minus infinity before the first one, so it keeps its
      place among its neighbours (leading ones are sent first, in file order).
    - Each line gets a delay drawn uniformly from [0, ``within_s``]; it arrives at its
      time plus its delay.  Lines are returned sorted by (arrival, file position): equal
      arrivals keep file order, and ``within_s = 0`` sends the file in event-time order.
    - So no line is overtaken by more than the bound: if ``a``'s time + ``within_s`` is
      earlier than ``b``'s time, ``a`` arrives before ``b``.
    - With ``resend > 0``, ``round(resend * n)`` of the ``n`` decodable lines (chosen by
      the seed) are sent a second time, the copy arriving at a seeded time between the
      original's arrival and its time + ``within_s`` (after the original on a tie).  Only
      decodable lines are resent: a resend is a browser retrying an event it sent.
    - Every draw comes from ``random.Random(seed).random()``, whose sequence Python keeps
      stable across versions; the delays are drawn first, one per line in file order, so a
      seed gives the same first arrivals with or without resends.

    :param lines: the file's lines, without their newlines (``streams.local.read_lines``).
    :param within_s: the largest delay in seconds (finite, ≥ 0).
    :param seed: the random seed; the same seed gives the same order.
    :param resend: the fraction of decodable lines sent twice, in [0, 1).
    :returns: ``(line number, line)`` pairs in arrival order; line numbers are the
        1-based positions in ``lines`` (a resent line appears twice with its number).
    :raises ValueError: on a negative or non-finite ``within_s`` or ``resend`` outside [0, 1).
    """
    _check(within_s, resend)
    rng = random.Random(seed)
    own = [_event_time(line) for line in lines]
    times = _carried(own)
    delays = [within_s * rng.random() for _ in lines]
    sends = [_Arrival(t + d, i, 0, line) for i, (t, d, line) in enumerate(zip(times, delays, lines, strict=True))]
    for i in _resent([i for i, t in enumerate(own) if t is not None], resend, rng):
        extra = min(within_s, delays[i] + (within_s - delays[i]) * rng.random())
        sends.append(_Arrival(times[i] + extra, i, 1, lines[i]))
    sends.sort()
    return [(send.index + 1, send.line) for send in sends]


def event_times(lines: Sequence[bytes]) -> list[float]:
    """Each line's time as :func:`arrival_order` reads it: its event time, else the
    previous decodable line's, else minus infinity."""
    return _carried([_event_time(line) for line in lines])


def _event_time(line: bytes) -> float | None:
    """The event time ingest reads from ``line``, or None if ingest rejects it (or it is blank)."""
    event = decode_line(line)
    return event.ts if isinstance(event, NormalizedEvent) else None


def _carried(own: Sequence[float | None]) -> list[float]:
    """Each time, a missing one replaced by the last time before it (minus infinity at first)."""
    times: list[float] = []
    last = -math.inf
    for ts in own:
        last = last if ts is None else ts
        times.append(last)
    return times


def _resent(candidates: Sequence[int], fraction: float, rng: random.Random) -> list[int]:
    """``round(fraction * len(candidates))`` of the candidates, in file order (one draw each)."""
    if fraction <= 0:
        return []
    draws = sorted((rng.random(), i) for i in candidates)
    return sorted(i for _, i in draws[: round(fraction * len(candidates))])


def _check(within_s: float, resend: float) -> None:
    """Refuse a bound or fraction the rule has no meaning for."""
    if not math.isfinite(within_s) or within_s < 0:
        raise ValueError(f"the delay bound must be a finite number of seconds >= 0, not {within_s}")
    if not 0 <= resend < 1:
        raise ValueError(f"the resend fraction must be in [0, 1), not {resend}")
