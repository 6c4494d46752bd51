"""Shared request fixtures of the prompt and template tests."""

from __future__ import annotations

from topology.schemas.analysis import TriggerEvidence, TriggerFired, TriggerType
from topology.schemas.feedback import (
    ActionLevel,
    Cognition,
    Direction,
    FeedbackRequest,
    Lane,
    Persistence,
    SessionMetrics,
)

PROGRAM = (
    '<xml xmlns="https://developers.google.com/blockly/xml">'
    '<block type="pg_events_when_started" id="a" x="20" y="20"><next>'
    '<block type="pg_drivetrain_drive_for" id="b"><field name="DIRECTION">fwd</field>'
    '<field name="UNITS">mm</field><value name="AMOUNT"><shadow type="math_number">'
    '<field name="NUM">600</field></shadow></value><next>'
    '<block type="pg_drivetrain_turn_for" id="c"><field name="TURNDIRECTION">right</field>'
    '<value name="ANGLE"><shadow type="math_number"><field name="NUM">90</field></shadow>'
    "</value></block></next></block></next></block>"
    '<block type="iq_motion_spin_for" id="d" x="300" y="20"><field name="MOTOR">ArmMotor</field>'
    '<field name="DIRECTION">up</field><field name="UNITS">degrees</field>'
    '<value name="AMOUNT"><shadow type="math_number"><field name="NUM">45</field></shadow>'
    "</value></block></xml>"
)

METRICS = SessionMetrics(
    playground="GO-Mars",
    segment_events=24,
    time_on_task_s=410.0,
    action_level=ActionLevel.HIGH,
    progress_pct=20.0,
    direction=Direction.STATIC,
    persistence=Persistence.IN_PROGRESS,
    cognition=Cognition.TRIAL_AND_ERROR,
    milestones_done=["sample_out_of_crater"],
    milestones_todo=["sample_to_lab", "solar_panel", "rover", "rocket_upright", "fuel_cells"],
    run_count=7,
    post_run_pause_count=2,
)

TRIGGER = TriggerFired(
    trigger_id="t-1",
    type=TriggerType.WHEEL_SPIN,
    student_key="otter12",
    student_id="Otter12",
    session_id="s-1",
    run_index=6,
    alert=None,
    ts=1000.0,
    timestamp="2026-05-06T09:14:07Z",
    playground="GOMars",
    event_id="5120007",
    detail="6 identical reruns",
    evidence=TriggerEvidence(recent_distances=[0, 0, 0, 0, 0, 0], zero_streak=6),
)

PROACTIVE = FeedbackRequest(
    request_id="r-1",
    lane=Lane.PROACTIVE,
    student_key="otter12",
    student_id="Otter12",
    session_id="s-1",
    playground="GOMars",
    ts=1000.0,
    trigger=TRIGGER,
    metrics=METRICS,
    program_xml=PROGRAM,
)

REACTIVE = FeedbackRequest(
    request_id="r-2",
    lane=Lane.REACTIVE,
    student_key="otter12",
    student_id="Otter12",
    session_id="s-1",
    playground="GO-Mars",
    ts=1100.0,
    question="why doesnt my arm move {it just sits there}",
    metrics=METRICS,
    program_xml=PROGRAM,
)

CHAT = [
    ("student", "how do i get the sample"),
    ("assistant", "Try driving to the crater first with `drive for`, then run it and watch."),
]
