"""Raw telemetry for the browser test: a student re-running one program unchanged.

Lines are built from a reference fixture's ``playgroundReset``, ``runProject``
and ``blockChanged`` events (their real project JSON), re-addressed to a new
student and session and re-timed to end just before ``now``, so the live
pipeline sees a fresh wheel-spin: one first run, then identical reruns.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from tests.datafiles import FIXTURES

_TEMPLATE = FIXTURES / "reference" / "03_reassure_a.ndjson"


def _templates() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for line in _TEMPLATE.read_text().splitlines():
        envelope = json.loads(line)
        out.setdefault(envelope["eventType"], envelope)
    return out


def _line(template: dict[str, Any], *, event_id: int, student: str, session: str, ts: float) -> bytes:
    payload = json.loads(template["raw_message"])
    stamp = datetime.fromtimestamp(int(ts), UTC)
    payload.update(studentID=student, sessionID=session, timestamp=stamp.strftime("%Y-%m-%dT%H:%M:%SZ"))
    envelope = {
        **template,
        "id": event_id,
        "studentID": student,
        "raw_message": json.dumps(payload, separators=(", ", ": ")),
        "received_at": stamp.isoformat(timespec="microseconds"),
    }
    return json.dumps(envelope).encode()


def wheel_spin_lines(
    student: str, session: str, *, now: float, reruns: int = 7, first_id: int = 5_000_000, step_s: float = 3.0
) -> list[bytes]:
    """A reset, then ``1 + reruns`` runs of the same program, then a block edit.

    With ``reruns`` ≥ 6 the engine fires wheel_spin on the sixth identical rerun;
    the closing edit ends the run episode, so the nudge is not held for a run
    in progress (a run stays open through resets until code changes or a long pause).
    """
    templates = _templates()
    count = reruns + 3
    start = now - count * step_s
    kinds = ["playgroundReset", *["runProject"] * (reruns + 1), "blockChanged"]
    return [
        _line(templates[kind], event_id=first_id + i, student=student, session=session, ts=start + i * step_s)
        for i, kind in enumerate(kinds)
    ]
