"""The per-student analysis engine: a pure state machine.

Fed one normalized event at a time (:meth:`StudentEngine.on_event`) and clock
advances (:meth:`StudentEngine.advance`), it returns typed outputs: scored
runs, trigger fires, episodes and pauses, and dead letters for runs whose
workspace cannot be used.  It never reads the wall clock: time is the events'
time or the ``now`` it is handed.  Deterministic: the same inputs give the
same outputs (and the same ids) every time.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from feedback.nudge import NudgeConfig
from streams import inactivity
from streams.config import EngineConfig
from streams.episodes import Episode, Pause, Segment, Segmenter
from streams.ids import trigger_id
from streams.metrics import MetricEvent
from streams.nudging import apply_policy
from streams.programs import (
    DictMetricLog,
    MetricLog,
    ProgramInfo,
    ProgramStore,
    Scorer,
    UnusableWorkspace,
    digest,
)
from streams.reorder import Held
from streams.runs import Fire, StretchCounters, score_run
from streams.state import SessionState, StudentState
from streams.timeutil import iso_utc
from topology.schemas import (
    DeadLetter,
    EpisodeClosed,
    FeedbackRequest,
    NormalizedEvent,
    PauseDetected,
    PauseType,
    RejectReason,
    RunScored,
    TriggerEvidence,
    TriggerFired,
    TriggerType,
)

Output = RunScored | TriggerFired | EpisodeClosed | PauseDetected | DeadLetter | FeedbackRequest

#: The program store's session key for the programs of held runs (a session id
#: never holds a control character: ingest refuses them).
HELD_PROGRAMS = "\x00held"


def _flagged(record: Output) -> Output:
    """A record produced by a late event, flagged as such: its run, the run's fires,
    and the episodes and pauses it closed."""
    if isinstance(record, RunScored | EpisodeClosed | PauseDetected) or (
        isinstance(record, TriggerFired) and record.run_index is not None
    ):
        return record.model_copy(update={"late": True})
    return record


_RUN = "runProject"
#: Soft events that stop a running program (they do not end the RUN episode).
RUN_STOPPERS = frozenset({"playgroundReset", "playgroundClosed"})


class StudentEngine:
    """Analysis of one student's merged stream, over a :class:`StudentState`."""

    def __init__(
        self,
        state: StudentState,
        config: EngineConfig,
        scorer: Scorer,
        programs: ProgramStore,
        nudge: NudgeConfig | None = None,
        metrics: MetricLog | None = None,
    ) -> None:
        self.state, self.config, self.scorer, self.programs = state, config, scorer, programs
        self.nudge = nudge
        self.metrics: MetricLog = metrics if metrics is not None else DictMetricLog(config.max_metric_events)
        """Nudge policy; None = detect only, no feedback requests at all."""
        self.late = 0
        """Events taken late (past the reorder window) by :meth:`offer`, for the adapter's metrics."""
        self.dropped: list[str] = []
        """Why sessions were dropped to keep the state bounded (``session_cap``,
        ``state_size``), one entry per dropped session, for the adapter's metrics."""

    # -- arrival order ---------------------------------------------------------------
    def offer(self, event: NormalizedEvent, line: int | None = None) -> list[Output]:
        """Take one arriving event: analysed in stream order once no event still to come
        can precede it (``REORDER_WINDOW_S``; 0 = at once, in arrival order).

        :param line: the event's file line number (the order's last tie-break).
        """
        window = self.config.reorder_window_s
        if window <= 0:
            return self.on_event(event)
        if line is None and event.source is not None:
            line = event.source.line
        late, released = self.state.reorder.offer(event.ts, event.envelope_id_int, line, self._hold(event), window)
        if late:
            self.late += 1
        return self._analyse(released)

    def release_until(self, clock: float, *, final: bool = False) -> list[Output]:
        """Analyse the held events before ``clock`` (all of them when ``final``); call
        before :meth:`advance` with the same (held-back) clock."""
        if self.config.reorder_window_s <= 0:
            return []
        reorder = self.state.reorder
        return self._analyse(reorder.release_all() if final else reorder.release_before(clock))

    def _hold(self, event: NormalizedEvent) -> dict[str, Any]:
        """The compact form of an event kept in the state while it waits; a run's
        program waits in the program store (the state stays small)."""
        held = event.model_dump(mode="json", exclude={"workspace_xml"})
        if event.event_type == _RUN and event.workspace_xml:
            held["program"] = program = digest(event.workspace_xml)
            self.programs.put(HELD_PROGRAMS, program, event.workspace_xml)
        return held

    def _analyse(self, released: list[Held]) -> list[Output]:
        out: list[Output] = []
        uses = Counter(h.value.get("program") for h in (*released, *self.state.reorder.held))
        for held in released:
            value = dict(held.value)
            program = value.pop("program", None)
            event = NormalizedEvent.model_validate(value)
            if program is not None:
                event = event.model_copy(update={"workspace_xml": self.programs.get(HELD_PROGRAMS, program)})
                uses[program] -= 1
                if not uses[program]:  # no other held run has this program
                    self.programs.delete(HELD_PROGRAMS, program)
            if held.late:  # as if it had happened at the student's latest time
                event = event.model_copy(update={"ts": held.ts, "timestamp": iso_utc(held.ts)})
                out += [_flagged(o) for o in self.on_event(event)]
            else:
                out += self.on_event(event)
        return out

    # -- events -------------------------------------------------------------------
    def on_event(self, event: NormalizedEvent) -> list[Output]:
        """Apply one event of this student; return what it produced, in order."""
        resolved = self._alerts(event.ts, inclusive=False, trailing=False)
        out: list[Output] = list(resolved)
        opened = event.session_id not in self.state.sessions
        session = self._session(event)
        for segment in session.segmenter.feed(event.event_type, event.ts):
            out.append(self._segment_record(event.session_id, session, segment))
        if event.event_type == _RUN:
            out.extend(self._run(event, session))
        self._remember(event, session)
        if opened:
            self._bound_state()
        fires = [o for o in out if isinstance(o, TriggerFired) and o.run_index is not None]
        return out + self._requests(fires, event.ts, resolved)

    def _requests(
        self,
        fires: list[TriggerFired],
        now: float,
        resolved: list[TriggerFired] | None = None,
    ) -> list[Output]:
        if self.nudge is None:
            return []
        return list(
            apply_policy(fires, self.state, self.programs, self.metrics, self.nudge, now=now, resolved=resolved or ())
        )

    def _session(self, event: NormalizedEvent) -> SessionState:
        session = self.state.sessions.get(event.session_id)
        if session is None:
            while len(self.state.sessions) >= self.config.max_sessions and self._drop_oldest("session_cap"):
                pass
            session = SessionState(student_id=event.student_id, segmenter=Segmenter(self.config))
            self.state.sessions[event.session_id] = session
        return session

    def _bound_state(self) -> None:
        """Drop the least recently active sessions while the state is over its budget."""
        while (
            len(self.state.sessions) > 1
            and len(self.state.to_bytes()) > self.config.max_state_bytes
            and self._drop_oldest("state_size")
        ):
            pass

    def _drop_oldest(self, why: str) -> bool:
        """Forget the least recently active session (never the student's latest)."""
        candidates = [
            (s.segmenter.last_ts if s.segmenter.last_ts is not None else float("-inf"), sid)
            for sid, s in self.state.sessions.items()
            if sid != self.state.last_session
        ]
        if not candidates:
            return False
        self.forget_session(min(candidates)[1])
        self.dropped.append(why)
        return True

    def _remember(self, event: NormalizedEvent, session: SessionState) -> None:
        st = self.state
        if st.last_ts is None or event.ts >= st.last_ts:
            st.last_ts, st.last_session, st.last_event_id = event.ts, event.session_id, event.event_id
            st.alerts_fired = 0
        if event.event_type == _RUN:
            session.run_stopped = False
        elif event.event_type in RUN_STOPPERS:
            session.run_stopped = True
        if event.error_message:
            session.last_error = event.error_message
        record = MetricEvent.record(
            ts=event.ts,
            event_type=event.event_type,
            playground=event.playground,
            playground_params=event.playground_params,
            block_event=event.block_event,
            error_message=event.error_message,
        )
        self.metrics.append(event.session_id, session.metric_count, record)
        session.metric_count += 1

    # -- runs ---------------------------------------------------------------------
    def _run(self, event: NormalizedEvent, session: SessionState) -> list[Output]:
        try:
            xml, info = self._program(event)
        except UnusableWorkspace as exc:
            return [self._unscored(event, session, exc)]
        playground = event.playground if event.playground is not None else session.run_playground
        new_stretch = not session.has_prev_run or playground != session.run_playground
        distance, comparable = self._distance(event, session, xml, new_stretch)
        if new_stretch:
            session.counters = StretchCounters()
        fires = score_run(session.counters, distance, playground, self.config)
        index = session.next_run
        session.next_run, session.run_playground, session.has_prev_run = index + 1, playground, True
        run = RunScored(
            student_key=self.state.student_key,
            student_id=session.student_id,
            session_id=event.session_id,
            run_index=index,
            event_id=event.event_id,
            ts=event.ts,
            timestamp=event.timestamp,
            playground=playground,
            edit_distance=distance,
            comparable=comparable,
            workspace_status="ok" if xml else "empty_workspace",
            n_blocks=info.n_blocks,
            n_stacks=info.n_stacks,
            label_tree_size=info.label_tree_size,
        )
        return [run, *(self._fired(run, session, fire) for fire in fires)]

    def _program(self, event: NormalizedEvent) -> tuple[str | None, ProgramInfo]:
        if event.workspace_status not in ("ok", "empty_workspace"):
            raise UnusableWorkspace(event.workspace_status, f"the run's project: {event.workspace_status}")
        xml = event.workspace_xml if event.workspace_status == "ok" else None
        return xml, self.scorer.inspect(xml)

    def _distance(
        self,
        event: NormalizedEvent,
        session: SessionState,
        xml: str | None,
        new_stretch: bool,
    ) -> tuple[int | None, bool]:
        new_digest = digest(xml)
        before = session.prev_digest
        if before != new_digest:
            self._store_program(event.session_id, session, new_digest, xml)
        if new_stretch:
            return None, True
        if before == new_digest:
            return 0, True
        previous = self.programs.get(event.session_id, before) if before else None
        measured = self.scorer.distance(previous or None, xml)
        return measured, measured is not None

    def _store_program(self, session_id: str, session: SessionState, new: str, xml: str | None) -> None:
        """Keep the new program and the one before it; forget the rest."""
        self.programs.put(session_id, new, xml or "")
        older = session.older_digest
        if older is not None and older not in (session.prev_digest, new):
            self.programs.delete(session_id, older)
        session.older_digest, session.prev_digest = session.prev_digest, new

    def _unscored(self, event: NormalizedEvent, session: SessionState, exc: UnusableWorkspace) -> DeadLetter:
        after = session.next_run - 1 if session.next_run else None
        return DeadLetter(
            reason=RejectReason(exc.reason),
            stage="analysis",
            detail=f"run not scored (after run {after}): {exc.detail}",
            original=event.model_dump_json(),
            source=event.source,
            event_id=event.event_id,
            student_key=event.student_key,
            session_id=event.session_id,
            dead_lettered_at=time.time(),
        )

    def _fired(self, run: RunScored, session: SessionState, fire: Fire) -> TriggerFired:
        return TriggerFired(
            trigger_id=trigger_id(run.student_key, run.session_id, fire.type.value, run.run_index),
            type=fire.type,
            student_key=run.student_key,
            student_id=run.student_id,
            session_id=run.session_id,
            run_index=run.run_index,
            alert=None,
            ts=run.ts,
            timestamp=run.timestamp,
            playground=run.playground,
            event_id=run.event_id,
            detail=fire.detail,
            evidence=TriggerEvidence(
                recent_distances=list(session.counters.recent),
                edit_distance=run.edit_distance,
                zero_streak=fire.zero_streak,
                iterative_count=fire.iter_count,
                threshold=fire.threshold,
            ),
        )

    # -- clock --------------------------------------------------------------------
    def advance(self, now: float, *, inclusive: bool = True, final: bool = False) -> list[Output]:
        """Move this student's clock to ``now``.

        Fires due inactive alerts (``<= now`` when ``inclusive``), closes
        episodes that no later event can join (all of them when ``final``).
        A student idle past the recency window gets no alerts at all (its
        open episodes close; the caller then drops the state).
        """
        expired = self.expired(now)
        alerts = [] if expired else self._alerts(now, inclusive=inclusive, trailing=True)
        out: list[Output] = list(alerts)
        for session_id, session in self.state.sessions.items():
            if final or expired or session.segmenter.idle_closes(now):
                for segment in session.segmenter.close():
                    out.append(self._segment_record(session_id, session, segment))
        return out + self._requests(alerts, now)

    def tick(self, now: float, *, inclusive: bool = True, final: bool = False) -> list[Output]:
        """Move the student's clock to ``now`` held back by the reorder window (the
        whole way when ``final``): the held events before it are analysed first."""
        clock = now if final else now - self.config.reorder_window_s
        return self.release_until(clock, final=final) + self.advance(clock, inclusive=inclusive, final=final)

    def next_tick(self, live: bool) -> float | None:
        """The earliest ``now`` at which :meth:`tick` could change something, or None."""
        window = self.config.reorder_window_s
        due = self.next_due(live)
        held = self.state.reorder.due(window)
        if due is not None:
            due += window
        return held if due is None else (due if held is None else min(due, held))

    def next_due(self, live: bool) -> float | None:
        """The earliest time a clock advance could change something, or None."""
        st, c = self.state, self.config
        if st.last_ts is None:
            return None
        due = [st.last_ts + c.recency_s]
        alert = inactivity.fire_time(st.last_ts, st.alerts_fired, c)
        if alert - st.last_ts <= c.recency_s:
            due.append(alert)
        if live:
            due += [
                s.segmenter.last_ts + c.pause_threshold_s
                for s in st.sessions.values()
                if s.segmenter.open is not None and s.segmenter.last_ts is not None
            ]
        return min(due)

    def drop_stale_sessions(self, now: float) -> list[str]:
        """Forget sessions idle longer than the recency window (not the latest one)."""
        stale = [
            sid
            for sid, s in self.state.sessions.items()
            if sid != self.state.last_session
            and s.segmenter.last_ts is not None
            and now - s.segmenter.last_ts > self.config.recency_s
        ]
        for sid in stale:
            self.forget_session(sid)
        return stale

    def forget_session(self, session_id: str) -> None:
        """Delete a session's state, programs and metric records."""
        session = self.state.sessions.pop(session_id)
        self.metrics.drop(session_id, session.metric_count)
        for known in (session.prev_digest, session.older_digest):
            if known is not None:
                self.programs.delete(session_id, known)

    def expired(self, now: float) -> bool:
        """The student's last event is older than the recency window: drop the state."""
        return self.state.last_ts is not None and now - self.state.last_ts > self.config.recency_s

    def _alerts(self, now: float, *, inclusive: bool, trailing: bool) -> list[TriggerFired]:
        st = self.state
        if st.last_ts is None or st.last_session is None:
            return []
        due = inactivity.due_alerts(st.last_ts, st.alerts_fired, now, inclusive, self.config)
        fired = [self._inactive(k, st.last_ts, trailing) for k in due]
        st.alerts_fired += len(fired)
        return fired

    def _inactive(self, k: int, idle_since: float, trailing: bool) -> TriggerFired:
        st = self.state
        assert st.last_session is not None
        session = st.sessions[st.last_session]
        at = inactivity.fire_time(idle_since, k, self.config)
        return TriggerFired(
            trigger_id=trigger_id(
                st.student_key, st.last_session, TriggerType.INACTIVE.value, idle_since_ts=idle_since, alert=k
            ),
            type=TriggerType.INACTIVE,
            student_key=st.student_key,
            student_id=session.student_id,
            session_id=st.last_session,
            run_index=None,
            alert=k,
            ts=at,
            timestamp=iso_utc(at),
            playground=session.run_playground,
            event_id=st.last_event_id,
            detail=f"idle {int((at - idle_since) // 60)}m",
            trailing=trailing,
            evidence=TriggerEvidence(
                recent_distances=list(session.counters.recent),
                idle_since_ts=idle_since,
                idle_s=at - idle_since,
                threshold=self.config.inactive_after_s,
            ),
        )

    # -- episodes -----------------------------------------------------------------
    def _segment_record(self, session_id: str, session: SessionState, seg: Segment) -> Output:
        key = self.state.student_key
        if isinstance(seg, Episode):
            return EpisodeClosed(
                student_key=key,
                session_id=session_id,
                type=seg.type,
                start_idx=seg.start_idx,
                end_idx=seg.end_idx,
                start_ts=seg.start_ts,
                end_ts=seg.end_ts,
                event_count=seg.event_count,
                soft_count=seg.soft_count,
            )
        assert isinstance(seg, Pause)
        if seg.type is PauseType.POST_RUN_PAUSE:
            session.post_run_pauses += 1
        else:
            session.inactive_pauses += 1
        return PauseDetected(
            student_key=key,
            session_id=session_id,
            type=seg.type,
            after_idx=seg.after_idx,
            start_ts=seg.start_ts,
            end_ts=seg.end_ts,
            duration=seg.duration,
        )
