"""Hostile telemetry lines, made to order, and a classroom file with them mixed in.

Each :class:`Hostile` is one line with the outcome the rules give it: a reject
reason (it must be dead-lettered under that reason) or ``None`` (accepted: it
belongs to a hostile student of its own, whose output is not compared).  Lines
that are rejected may use an honest student's id: a rejected line must change
nothing for anyone.  Times are taken from the line a hostile line follows, so
mixing them in never moves a clock or the horizon.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass

#: Student keys of the hostile students whose lines are accepted.
HOSTILE_PREFIX = "zz-hostile-"


@dataclass(frozen=True)
class Hostile:
    """One hostile line and the outcome it must have."""

    name: str
    line: bytes
    reason: str | None
    """The dead-letter reason, or None when the line is accepted."""


def envelope(
    line_id: object,
    student: str,
    session: str,
    ts: str,
    event_type: str = "blockCreated",
    received_at: str | None = None,
    **payload: object,
) -> bytes:
    """A line in the telemetry format: the payload JSON-encoded in ``raw_message``."""
    body = {
        "eventType": event_type,
        "studentID": student,
        "sessionID": session,
        "timestamp": ts,
        "playground": "GOMars",
        **payload,
    }
    env: dict[str, object] = {
        "id": line_id,
        "eventType": event_type,
        "classCode": "HOSTILE",
        "studentID": student,
        "raw_message": json.dumps(body),
    }
    if received_at is not None:
        env["received_at"] = received_at
    return json.dumps(env).encode()


def workspace(xml: str) -> str:
    """A payload ``project`` holding ``xml`` as its workspace."""
    return json.dumps({"mode": "Blocks", "workspace": xml})


def entity_bomb(depth: int = 24_500) -> str:
    """Nested entity declarations: expanding them overflows libexpat 2.5's stack."""
    decls = "".join(f'<!ENTITY e{i} "&e{i - 1};">' if i else '<!ENTITY e0 "x">' for i in range(depth))
    return (
        f'<!DOCTYPE xml [{decls}]><xml><block type="pg_events_when_started">'
        f'<field name="F">&e{depth - 1};</field></block></xml>'
    )


def billion_laughs() -> str:
    """The classic exponential entity expansion."""
    decls = '<!ENTITY l0 "lol">' + "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
    return f'<!DOCTYPE xml [{decls}]><xml><block type="a"><field name="F">&l9;</field></block></xml>'


def external_entity() -> str:
    """An external entity that would read a local file."""
    return (
        '<!DOCTYPE xml [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        '<xml><block type="a"><field name="F">&x;</field></block></xml>'
    )


def deep_program(depth: int) -> str:
    """A program nested ``depth`` statement bodies deep."""
    return (
        '<xml><block type="pg_events_when_started"><next>'
        + '<block type="pg_control_forever"><statement name="SUBSTACK">' * depth
        + '<block type="pg_drivetrain_drive"/>'
        + "</statement></block>" * depth
        + "</next></block></xml>"
    )


def catalogue(ts: str, honest: str, honest_session: str, honest_id: object, n: int, large: int) -> list[Hostile]:
    """The ``n``-th batch of hostile lines at time ``ts`` (ids unique per ``n``).

    :param honest: an honest student's id and ``honest_session`` a session of
        theirs; ``honest_id`` an id already accepted for them (so a re-sent copy
        with a bad field is a ``duplicate_id``, which ranks first).
    :param large: a line length over the limit in force (``too_large``).
    """
    me = f"{HOSTILE_PREFIX}{n}"
    base = 900_000_000 + n * 100
    pad = "x" * large
    cases: list[tuple[str, Callable[[], bytes], str | None]] = [
        ("entity bomb run", lambda: envelope(base, me, "s", ts, "runProject", project=workspace(entity_bomb())), None),
        (
            "billion laughs run",
            lambda: envelope(base + 1, me, "s", ts, "runProject", project=workspace(billion_laughs())),
            None,
        ),
        (
            "external entity run",
            lambda: envelope(base + 2, me, "s", ts, "runProject", project=workspace(external_entity())),
            None,
        ),
        (
            "NUL in free text",
            lambda: envelope(
                base + 3,
                me,
                "s",
                ts,
                "blockChanged",
                errorMessage="bad\x00byte",
                playground="Rover\x00Rescue",
                classCode="A\x00B",
            ),
            None,
        ),
        (
            "deep program run",
            lambda: envelope(base + 4, me, "s", ts, "runProject", project=workspace(deep_program(600))),
            None,
        ),
        (
            "long playground",
            lambda: envelope(base + 5, me, "s", ts, "runProject", playground="P" * 5000, project=workspace("<xml/>")),
            None,
        ),
        (
            "deep blockEventData",
            lambda: envelope(base + 6, me, "s", ts, "blockMoved", blockEventData=_nested(300), filler=pad[:20_000]),
            None,
        ),
        ("control char in studentID", lambda: envelope(base + 7, honest + "\x1b[2J", honest_session, ts), "bad_field"),
        ("NUL in sessionID", lambda: envelope(base + 8, honest, "s\x00", ts), "bad_field"),
        ("long sessionID", lambda: envelope(base + 9, honest, "s" * 129, ts), "bad_field"),
        ("long eventType", lambda: envelope(base + 10, honest, honest_session, ts, "E" * 500), "bad_field"),
        ("resent id with a bad field", lambda: envelope(honest_id, honest, "s\x07", ts), "duplicate_id"),
        (
            "future timestamp",
            lambda: envelope(base + 11, honest, honest_session, "2099-01-01T00:00:00Z", received_at=ts),
            "future_timestamp",
        ),
        ("oversize line", lambda: envelope(base + 12, honest, honest_session, ts, filler=pad), "too_large"),
        ("bad timestamp", lambda: envelope(base + 13, honest, honest_session, "yesterday\x00"), "bad_timestamp"),
        ("not UTF-8", lambda: b'{"id": 1, "studentID": "\xff\xfe"}', "invalid_json"),
        ("deep JSON", lambda: b"[" * 5000 + b"]" * 5000, "invalid_json"),
        ("lone surrogate", lambda: b'{"id": 2, "studentID": "\\ud800"}', "invalid_json"),
        ("number studentID", lambda: envelope(base + 14, 12, "s", ts), "missing_studentID"),
    ]
    return [Hostile(name, make(), reason) for name, make, reason in cases]


def _nested(depth: int) -> dict[str, object]:
    node: dict[str, object] = {"leaf": 1}
    for _ in range(depth):
        node = {"n": node}
    return node


def sessions_flood(ts: str, n: int, count: int) -> list[Hostile]:
    """One hostile student opening ``count`` sessions (state is capped, not grown)."""
    me = f"{HOSTILE_PREFIX}flood{n}"
    return [
        Hostile("session flood", envelope(950_000_000 + n * 10_000 + i, me, f"flood-{i}-" + "q" * 100, ts), None)
        for i in range(count)
    ]


def mixed_in(
    lines: list[bytes], seed: int, large: int, batches: int = 3, flood: int = 60
) -> tuple[list[bytes], list[Hostile]]:
    """``lines`` with ``batches`` catalogues and one session flood inserted at seeded places."""
    rng = random.Random(seed)
    out = list(lines)
    inserted: list[Hostile] = []
    places = sorted(rng.sample(range(20, len(lines) - 20), batches + 1), reverse=True)
    for n, at in enumerate(places):
        prev = json.loads(lines[at - 1])
        payload = json.loads(prev["raw_message"])
        ts = payload["timestamp"]
        if n == batches:
            batch = sessions_flood(ts, n, flood)
        else:
            batch = catalogue(ts, payload["studentID"], payload["sessionID"], prev["id"], n, large)
        rng.shuffle(batch)
        out[at:at] = [h.line for h in batch]
        inserted += batch
    return out, inserted
