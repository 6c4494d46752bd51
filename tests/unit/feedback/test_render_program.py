"""The compact [Active]/[Orphaned] program rendering."""

from __future__ import annotations

import pytest

from feedback.render import program_block_types, render_program

NS = 'xmlns="https://developers.google.com/blockly/xml"'


def ws(body: str, ns: bool = True) -> str:
    return f"<xml {NS if ns else ''}>{body}</xml>"


def num(slot: str, value: str) -> str:
    return f'<value name="{slot}"><shadow type="math_number"><field name="NUM">{value}</field></shadow></value>'


EXAMPLE_A = ws(
    '<block type="pg_events_when_started" id="a" x="20" y="20"><next>'
    '<block type="pg_drivetrain_drive_for" id="b"><field name="DIRECTION">fwd</field>'
    f'<field name="UNITS">mm</field>{num("AMOUNT", "600")}<next>'
    '<block type="pg_drivetrain_turn_for" id="c"><field name="TURNDIRECTION">right</field>'
    f"{num('ANGLE', '90')}</block></next></block></next></block>"
    '<block type="iq_motion_spin_for" id="d" x="300" y="20"><field name="MOTOR">ArmMotor</field>'
    '<field name="DIRECTION">up</field><field name="UNITS">degrees</field>'
    f"{num('AMOUNT', '45')}</block>"
)

EXAMPLE_A_TARGET = """\
[Active]
 events_when_started
  drivetrain_drive_for (DIRECTION=fwd,UNITS=mm,AMOUNT=600)
  drivetrain_turn_for (TURNDIRECTION=right,ANGLE=90)
[Orphaned]
 iq_motion_spin_for (MOTOR=ArmMotor,DIRECTION=up,UNITS=degrees,AMOUNT=45)"""

EXAMPLE_B = ws(
    '<block type="pg_events_when_started" id="h"><next>'
    '<block type="pg_control_repeat_until" id="r"><value name="CONDITION">'
    '<block type="pg_sensing_optical_near_object" id="o"><field name="OPTICAL">FrontEye</field>'
    '</block></value><statement name="SUBSTACK"><block type="pg_drivetrain_drive" id="d">'
    '<field name="DIRECTION">fwd</field></block></statement><next>'
    '<block type="pg_control_if_then_else" id="i"><value name="CONDITION">'
    '<block type="pg_operator_comparison" id="c"><field name="COMPARISON">&lt;</field>'
    '<value name="NUM1"><block type="pg_sensing_drive_heading" id="dh"/></value>'
    f"{num('NUM2', '90')}</block></value>"
    '<statement name="SUBSTACK"><block type="pg_drivetrain_turn" id="t">'
    '<field name="TURNDIRECTION">right</field></block></statement>'
    '<statement name="SUBSTACK2"><block type="pg_drivetrain_stop_driving" id="s"/></statement>'
    "</block></next></block></next></block>"
    '<block type="pg_events_broadcast" id="bc" x="400" y="50">'
    '<field name="BROADCAST_OPTION">go</field></block>'
)

EXAMPLE_B_TARGET = """\
[Active]
 events_when_started
  control_repeat_until
   sensing_optical_near_object (OPTICAL=FrontEye)
   drivetrain_drive (DIRECTION=fwd)
  control_if_then_else
   operator_comparison (COMPARISON=<,NUM2=90)
    sensing_drive_heading
   drivetrain_turn (TURNDIRECTION=right)
  else:
   drivetrain_stop_driving
[Orphaned]
 events_broadcast (BROADCAST_OPTION=go)"""


def test_example_a_exact() -> None:
    assert render_program(EXAMPLE_A) == EXAMPLE_A_TARGET


def test_example_a_without_namespace_is_identical() -> None:
    assert render_program(EXAMPLE_A.replace(NS, "")) == EXAMPLE_A_TARGET


def test_example_b_broadcast_stack_is_orphaned() -> None:
    assert render_program(EXAMPLE_B) == EXAMPLE_B_TARGET


def test_namespaced_literals_are_folded_with_prefixed_tags() -> None:
    xml = (
        '<b:xml xmlns:b="https://developers.google.com/blockly/xml">'
        '<b:block type="pg_events_when_started"><b:next><b:block type="pg_control_wait">'
        '<b:value name="DURATION"><b:shadow type="math_number"><b:field name="NUM">4</b:field>'
        "</b:shadow></b:value></b:block></b:next></b:block></b:xml>"
    )
    assert render_program(xml) == ("[Active]\n events_when_started\n  control_wait (DURATION=4)\n[Orphaned]\n (empty)")


def proc_def(name: str, body: str = "", disabled: bool = False) -> str:
    flag = ' disabled="true"' if disabled else ""
    return (
        f'<block type="procedures_definition"{flag}><value name="custom_block">'
        f'<shadow type="procedures_prototype"><mutation proccode="{name}"/></shadow></value>'
        f"{'<next>' + body + '</next>' if body else ''}</block>"
    )


def proc_call(name: str, disabled: bool = False, nxt: str = "") -> str:
    flag = ' disabled="true"' if disabled else ""
    return (
        f'<block type="procedures_call"{flag}><mutation proccode="{name}"/>'
        f"{'<next>' + nxt + '</next>' if nxt else ''}</block>"
    )


def started(body: str) -> str:
    return f'<block type="pg_events_when_started"><next>{body}</next></block>'


STOP = '<block type="pg_drivetrain_stop_driving"/>'


def test_called_procedure_is_active_and_uncalled_is_orphaned() -> None:
    xml = ws(started(proc_call("go")) + proc_def("go", STOP) + proc_def("unused", STOP))
    assert render_program(xml) == (
        "[Active]\n"
        " events_when_started\n"
        "  procedures_call (PROC=go)\n"
        " procedures_definition (PROC=go)\n"
        "  drivetrain_stop_driving\n"
        "[Orphaned]\n"
        " procedures_definition (PROC=unused)\n"
        "  drivetrain_stop_driving"
    )


def test_procedure_liveness_is_transitive() -> None:
    xml = ws(proc_def("b", STOP) + proc_def("a", proc_call("b")) + started(proc_call("a")))
    out = render_program(xml)
    assert out is not None
    assert out.split("[Orphaned]")[1].strip() == "(empty)"


def test_procedure_called_only_from_orphaned_code_is_orphaned() -> None:
    xml = ws(started(STOP) + proc_call("x") + proc_def("x", STOP))
    out = render_program(xml)
    assert out is not None
    assert "procedures_definition (PROC=x)" in out.split("[Orphaned]")[1]


def test_first_definition_of_a_name_wins() -> None:
    xml = ws(started(proc_call("x")) + proc_def("x", STOP) + proc_def("x", '<block type="pg_control_wait"/>'))
    active, orphaned = render_program(xml).split("[Orphaned]")  # type: ignore[union-attr]
    assert "drivetrain_stop_driving" in active and "control_wait" in orphaned


def test_disabled_call_does_not_make_a_definition_live() -> None:
    xml = ws(started(proc_call("x", disabled=True, nxt=STOP)) + proc_def("x", STOP))
    out = render_program(xml)
    assert out == (
        "[Active]\n"
        " events_when_started\n"
        "  procedures_call (PROC=x) [disabled]\n"
        "  drivetrain_stop_driving\n"
        "[Orphaned]\n"
        " procedures_definition (PROC=x)\n"
        "  drivetrain_stop_driving"
    )


def test_call_inside_a_disabled_body_does_not_count() -> None:
    loop = (
        '<block type="pg_control_forever" disabled-reasons="MANUALLY_DISABLED">'
        f'<statement name="SUBSTACK">{proc_call("x")}</statement></block>'
    )
    out = render_program(ws(started(loop) + proc_def("x", STOP)))
    assert out is not None
    assert "  control_forever [disabled]\n   procedures_call (PROC=x)" in out
    assert "procedures_definition (PROC=x)" in out.split("[Orphaned]")[1]


@pytest.mark.parametrize("flag", ['disabled="true"', 'disabled="1"', 'disabled-reasons="X"'])
def test_disabled_markers(flag: str) -> None:
    xml = ws(started(f'<block type="pg_control_wait" {flag}>{num("DURATION", "2")}</block>'))
    assert "  control_wait (DURATION=2) [disabled]" in (render_program(xml) or "")


@pytest.mark.parametrize("flag", ['disabled="false"', 'disabled="0"', 'disabled-reasons=""'])
def test_not_disabled_markers(flag: str) -> None:
    xml = ws(started(f'<block type="pg_control_wait" {flag}/>'))
    assert "[disabled]" not in (render_program(xml) or "")


def test_disabled_hat_is_orphaned() -> None:
    xml = ws('<block type="pg_events_when_started" disabled="true"><next>' + STOP + "</next></block>")
    assert render_program(xml) == (
        "[Active]\n (empty)\n[Orphaned]\n events_when_started [disabled]\n  drivetrain_stop_driving"
    )


def test_value_prefers_an_enabled_block_then_the_shadow() -> None:
    reporter = '<block type="pg_sensing_drive_heading"{}/>'
    value = (
        '<block type="pg_control_wait"><value name="DURATION">'
        '<shadow type="math_number"><field name="NUM">3</field></shadow>{}</value></block>'
    )
    live = render_program(ws(started(value.format(reporter.format("")))))
    off = render_program(ws(started(value.format(reporter.format(' disabled="true"')))))
    assert "  control_wait\n   sensing_drive_heading\n" in (live or "")
    assert "  control_wait (DURATION=3)\n   sensing_drive_heading [disabled]\n" in (off or "")


@pytest.mark.parametrize(
    "hat",
    [
        "pg_events_when_started",
        "pg_events_when_broadcasted",
        "pg_events_when_bumper",
        "pg_events_when_timer",
        "pg_events_optical_detect_object",
    ],
)
def test_every_hat_is_active(hat: str) -> None:
    out = render_program(ws(f'<block type="{hat}"/>'))
    assert out == f"[Active]\n {hat[3:]}\n[Orphaned]\n (empty)"


@pytest.mark.parametrize("block_type", ["pg_events_broadcast", "pg_events_broadcast_and_wait", "pg_drivetrain_drive"])
def test_non_hats_are_orphaned(block_type: str) -> None:
    out = render_program(ws(f'<block type="{block_type}"/>'))
    assert out is not None and out.startswith("[Active]\n (empty)\n[Orphaned]")


def test_prefixes_stripped_once() -> None:
    xml = ws('<block type="aim_thing"/><block type="mixed_pg_other"/><block type="pg_pg_x"/>')
    assert render_program(xml) == ("[Active]\n (empty)\n[Orphaned]\n thing\n pg_other\n pg_x")


def test_document_order_not_id_order() -> None:
    xml = ws('<block type="b_second" id="a"/><block type="a_first" id="z"/>')
    assert render_program(xml) == "[Active]\n (empty)\n[Orphaned]\n b_second\n a_first"


def test_nested_bodies_keep_their_chain_depth() -> None:
    body = '<block type="pg_drivetrain_drive"><next><block type="pg_drivetrain_turn"/></next></block>'
    loop = f'<block type="pg_control_repeat">{num("TIMES", "4")}<statement name="SUBSTACK">{body}</statement></block>'
    out = render_program(ws(started(loop)))
    assert out == (
        "[Active]\n events_when_started\n  control_repeat (TIMES=4)\n   drivetrain_drive\n"
        "   drivetrain_turn\n[Orphaned]\n (empty)"
    )


def test_orphan_chain_uses_root_then_depth_two() -> None:
    xml = ws('<block type="pg_drivetrain_drive"><next><block type="pg_drivetrain_turn"/></next></block>')
    assert render_program(xml) == "[Active]\n (empty)\n[Orphaned]\n drivetrain_drive\n  drivetrain_turn"


def test_else_line_without_first_body() -> None:
    block = f'<block type="pg_control_if_then_else"><statement name="SUBSTACK2">{STOP}</statement></block>'
    out = render_program(ws(started(block)))
    assert "  control_if_then_else\n  else:\n   drivetrain_stop_driving" in (out or "")


@pytest.mark.parametrize(
    "xml",
    [
        None,
        "",
        "   ",
        "<xml",
        "not xml at all",
        ws(""),
        ws("<variables><variable>x</variable></variables>"),
        "<xml><shadow type='math_number'/></xml>",
    ],
)
def test_nothing_to_render_gives_none(xml: str | None) -> None:
    assert render_program(xml) is None


def test_program_block_types_live_first_without_shadows() -> None:
    assert program_block_types(EXAMPLE_A) == [
        "pg_events_when_started",
        "pg_drivetrain_drive_for",
        "pg_drivetrain_turn_for",
        "iq_motion_spin_for",
    ]
    assert program_block_types(EXAMPLE_A, active_only=True) == [
        "pg_events_when_started",
        "pg_drivetrain_drive_for",
        "pg_drivetrain_turn_for",
    ]
    assert program_block_types("<bad") == []


def test_deep_nesting_renders_in_bounded_depth_without_recursion_errors() -> None:
    from feedback.render import MAX_DEPTH
    from tests.hostile.lines import deep_program

    xml = deep_program(5000)
    text = render_program(xml)
    assert text is not None
    lines = text.splitlines()
    assert any("not shown" in line for line in lines)
    assert max(len(line) - len(line.lstrip()) for line in lines) <= MAX_DEPTH + 1
    shown = sum(1 for line in lines if line.strip().startswith(("control_forever", "events_when", "drivetrain")))
    assert f"({5002 - shown} more nested blocks not shown)" in text  # every block counted once
    assert program_block_types(xml) == ["pg_events_when_started", "pg_control_forever", "pg_drivetrain_drive"]
