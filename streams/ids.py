"""Deterministic ids: the same inputs always give the same id.

A trigger's id is derived from (student, session, type, run index) for the
momentary types and from (student, session, idle-since time, alert number)
for inactive, so a re-delivered, recomputed or replayed fire has the same id.
"""

from __future__ import annotations

import uuid

NAMESPACE = uuid.UUID("6f1c8d2e-3b4a-5c6d-8e9f-0a1b2c3d4e5f")


def trigger_id(
    student_key: str,
    session_id: str,
    kind: str,
    run_index: int | None = None,
    idle_since_ts: float | None = None,
    alert: int | None = None,
) -> str:
    """The fire-once id of a trigger."""
    if run_index is not None:
        name = f"trigger|{student_key}|{session_id}|{kind}|run|{run_index}"
    else:
        name = f"trigger|{student_key}|{session_id}|{kind}|idle|{idle_since_ts:.3f}|alert|{alert}"
    return str(uuid.uuid5(NAMESPACE, name))


def derived_id(*parts: object) -> str:
    """A uuid5 of the given parts (feedback requests, responses, ...)."""
    return str(uuid.uuid5(NAMESPACE, "|".join(str(p) for p in parts)))
