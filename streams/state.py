"""Per-student analysis state and its compact JSON form (the table value).

Small by design: counters, clocks, the open episode, a bounded list of compact
metric events per session and the digest (not the text) of the previous run's
program.  Program text lives in the separate programs store, written only when
a run's program changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from streams.config import EngineConfig
from streams.episodes import Segmenter
from streams.reorder import Reorderer
from streams.runs import StretchCounters

STATE_VERSION = 4


@dataclass(slots=True)
class SessionState:
    """Everything the engine keeps about one (student, session) stream."""

    student_id: str
    segmenter: Segmenter
    next_run: int = 0
    run_playground: str | None = None
    has_prev_run: bool = False
    prev_digest: str | None = None
    older_digest: str | None = None
    """The program before the previous one (kept until the next change)."""
    counters: StretchCounters = field(default_factory=StretchCounters)
    post_run_pauses: int = 0
    inactive_pauses: int = 0
    last_error: str | None = None
    metric_count: int = 0
    """Metric records appended to the session's metric log so far."""
    latest_project_digest: str | None = None
    run_stopped: bool = False
    """The open run was stopped by a playground reset or close (the robot is idle)."""

    @property
    def run_in_progress(self) -> bool:
        """The student's latest run has not ended: no ``projectEnd``, no other
        action, no reset of the playground since it started."""
        return self.segmenter.run_open and not self.run_stopped

    def to_json(self) -> dict[str, Any]:
        return {
            "sid": self.student_id,
            "seg": self.segmenter.to_json(),
            "nr": self.next_run,
            "pg": self.run_playground,
            "hp": self.has_prev_run,
            "pd": self.prev_digest,
            "od": self.older_digest,
            "c": self.counters.to_json(),
            "prp": self.post_run_pauses,
            "ip": self.inactive_pauses,
            "err": self.last_error,
            "mc": self.metric_count,
            "lpd": self.latest_project_digest,
            "rs": self.run_stopped,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any], config: EngineConfig) -> SessionState:
        return cls(
            student_id=raw["sid"],
            segmenter=Segmenter.from_json(raw["seg"], config),
            next_run=raw["nr"],
            run_playground=raw["pg"],
            has_prev_run=raw["hp"],
            prev_digest=raw["pd"],
            older_digest=raw["od"],
            counters=StretchCounters.from_json(raw["c"]),
            post_run_pauses=raw["prp"],
            inactive_pauses=raw["ip"],
            last_error=raw["err"],
            metric_count=raw["mc"],
            latest_project_digest=raw["lpd"],
            run_stopped=raw.get("rs", False),
        )


@dataclass(slots=True)
class StudentState:
    """Everything the engine keeps about one student (all sessions)."""

    student_key: str
    partition: int = -1
    applied: dict[str, int] = field(default_factory=dict)
    """Per raw partition, the raw offset of the last applied event: copies and
    re-deliveries of an applied event are skipped (a student's raw offsets grow)."""
    last_ts: float | None = None
    last_session: str | None = None
    last_event_id: str | None = None
    alerts_fired: int = 0
    """Inactive alerts already fired in the current idle spell."""
    sessions: dict[str, SessionState] = field(default_factory=dict)
    policy: dict[str, Any] = field(default_factory=dict)
    """Nudge-policy state (owned by the policy; opaque here)."""
    reorder: Reorderer = field(default_factory=Reorderer)
    """Events waiting for their turn (arrival order is not event order)."""

    def to_bytes(self) -> bytes:
        """The table value."""
        return orjson.dumps(
            {
                "v": STATE_VERSION,
                "k": self.student_key,
                "p": self.partition,
                "o": self.applied,
                "t": self.last_ts,
                "ls": self.last_session,
                "le": self.last_event_id,
                "a": self.alerts_fired,
                "s": {sid: s.to_json() for sid, s in self.sessions.items()},
                "pol": self.policy,
                **({"ro": ro} if (ro := self.reorder.to_json()) is not None else {}),
            }
        )

    @classmethod
    def from_bytes(cls, data: bytes, config: EngineConfig) -> StudentState:
        raw = orjson.loads(data)
        if raw.get("v") != STATE_VERSION:
            raise ValueError(f"student state version {raw.get('v')!r} is not {STATE_VERSION}")
        return cls(
            student_key=raw["k"],
            partition=raw["p"],
            applied=raw["o"],
            last_ts=raw["t"],
            last_session=raw["ls"],
            last_event_id=raw["le"],
            alerts_fired=raw["a"],
            sessions={sid: SessionState.from_json(s, config) for sid, s in raw["s"].items()},
            policy=raw["pol"],
            reorder=Reorderer.from_json(raw.get("ro")),
        )
