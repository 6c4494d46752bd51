"""From fires to feedback requests: the nudge policy applied inside the engine.

Pure glue between the engine's state and :mod:`feedback.nudge`.  Every fire
ends as exactly one proactive :class:`FeedbackRequest` — ``act`` or
``suppress`` with its reason — except while it is held for a running program,
when its request comes out at release.  An inactive alert noticed only when
the student's next event arrived is ``resolved``: the student is back.
Reactive questions get a request with the session's measurements, or a
canned reply (no session yet, or a run in progress).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from feedback.nudge import NudgeConfig, NudgeState, Verdict, decide
from streams.ids import derived_id
from streams.metrics import MetricEvent, compute_metrics
from streams.programs import MetricLog, ProgramStore
from streams.state import SessionState, StudentState
from topology.schemas import ChatRequest, FeedbackRequest, Lane, SessionMetrics, TriggerFired

RESOLVED = "resolved"


def session_metrics(session_id: str, session: SessionState, log: MetricLog, keep: int = 400) -> SessionMetrics:
    """The measurements of a session as of now."""
    events = [MetricEvent.from_json(raw) for raw in log.load(session_id, session.metric_count, keep)]
    return compute_metrics(
        events,
        run_count=sum(1 for e in events if e.event_type == "runProject"),
        post_run_pause_count=session.post_run_pauses,
        inactive_pause_count=session.inactive_pauses,
        run_in_progress=session.run_in_progress,
    )


def latest_program(programs: ProgramStore, session_id: str, session: SessionState | None) -> str | None:
    """The latest scored run's program (None before any run or when empty)."""
    if session is None or session.prev_digest is None:
        return None
    return programs.get(session_id, session.prev_digest) or None


def _proactive(
    fire: TriggerFired,
    state: StudentState,
    programs: ProgramStore,
    log: MetricLog,
    *,
    act: bool,
    reason: str | None,
) -> FeedbackRequest:
    session = state.sessions.get(fire.session_id)
    metrics = session_metrics(fire.session_id, session, log) if act and session is not None else None
    return FeedbackRequest(
        request_id=derived_id("feedback", fire.trigger_id),
        lane=Lane.PROACTIVE,
        student_key=fire.student_key,
        student_id=fire.student_id,
        session_id=fire.session_id,
        playground=fire.playground,
        ts=fire.ts,
        trigger=fire,
        decision="act" if act else "suppress",
        suppress_reason=reason,
        metrics=metrics,
        program_xml=latest_program(programs, fire.session_id, session) if act else None,
    )


def apply_policy(
    fires: Sequence[TriggerFired],
    state: StudentState,
    programs: ProgramStore,
    log: MetricLog,
    config: NudgeConfig,
    *,
    now: float,
    resolved: Sequence[TriggerFired] = (),
) -> list[FeedbackRequest]:
    """Decide ``fires`` (and release a held fire whose run ended); update the state."""
    out = [_proactive(f, state, programs, log, act=False, reason=RESOLVED) for f in resolved]
    if not fires and not NudgeState.holds(state.policy):
        return out  # nothing to decide (most events): the stored policy is not even read
    latest = state.sessions.get(state.last_session or "")
    running = latest is not None and latest.run_in_progress
    policy = NudgeState.from_json(state.policy)
    last_run = latest.next_run - 1 if latest is not None and latest.next_run else None
    result = decide(fires, policy, config, now=now, run_in_progress=running, last_run_index=last_run)
    state.policy = result.state.to_json()
    for decision in result.decisions:
        if decision.verdict is Verdict.HOLD:
            continue
        act = decision.verdict is Verdict.ACT
        reason = decision.reason.value if decision.reason is not None else None
        out.append(_proactive(decision.trigger, state, programs, log, act=act, reason=reason))
    return out


def answer_request(
    chat: ChatRequest,
    state: StudentState | None,
    programs: ProgramStore | None,
    log: MetricLog | None = None,
) -> FeedbackRequest:
    """The reactive request for a student's question."""
    session_id = chat.session_id or (state.last_session if state else None)
    session = state.sessions.get(session_id) if state and session_id else None

    def request(**situation: Any) -> FeedbackRequest:
        return FeedbackRequest(
            request_id=derived_id("feedback", chat.request_id),
            lane=Lane.REACTIVE,
            student_key=chat.student_key,
            student_id=chat.student_id,
            session_id=session_id or "",
            ts=chat.ts,
            question=chat.text,
            chat_request_id=chat.request_id,
            **situation,
        )

    if session is None or session_id is None:
        return request(playground=None, canned="no_session")
    playground = session.run_playground
    if session.run_in_progress:
        return request(playground=playground, canned="run_in_progress")
    program = latest_program(programs, session_id, session) if programs is not None else None
    metrics = session_metrics(session_id, session, log) if log is not None else None
    return request(playground=playground, metrics=metrics, program_xml=program)
