"""Workspace XML to labelled trees: every parsing rule, one test each."""

from __future__ import annotations

import pytest

from tree_edit import (
    NodeKind,
    TreeEditError,
    UnusableReason,
    WorkspaceError,
    distance,
    parse_workspace,
)

NS = 'xmlns="https://developers.google.com/blockly/xml"'
README_EXAMPLE = f"""
<xml {NS}>
  <block type="pg_events_when_started" id="h7#Qe" x="220" y="90">
    <next><block type="pg_drivetrain_drive_for" id="t2$Lw">
      <field name="DIRECTION">fwd</field><field name="UNITS">mm</field>
      <value name="AMOUNT"><shadow type="math_number" id="n1">
        <field name="NUM">600</field></shadow></value>
    </block></next>
  </block>
  <block type="pg_drivetrain_turn_for" id="d9!Kp" x="480" y="260">
    <field name="TURNDIRECTION">left</field>
    <value name="AMOUNT"><shadow type="math_number" id="n2">
      <field name="NUM">90</field></shadow></value>
  </block>
</xml>"""


def outline(body: str) -> str:
    return parse_workspace(f"<xml {NS}>{body}</xml>").outline()


def test_readme_example_tree_and_stats() -> None:
    tree = parse_workspace(README_EXAMPLE)
    assert tree.outline() == (
        "ROOT(pg_events_when_started(next("
        "pg_drivetrain_drive_for|DIRECTION=fwd|UNITS=mm|AMOUNT.NUM=600)), "
        "pg_drivetrain_turn_for|TURNDIRECTION=left|AMOUNT.NUM=90)"
    )
    assert (tree.n_blocks, tree.n_stacks, tree.label_tree_size) == (3, 2, 5)
    kinds = [tree.root.kind, tree.root.children[0].kind, tree.root.children[0].children[0].kind]
    assert kinds == [NodeKind.ROOT, NodeKind.BLOCK, NodeKind.CONNECTOR]


@pytest.mark.parametrize(
    "xml", ["", "   \n\t", "<xml/>", f"<xml {NS}></xml>", f"<xml {NS}><variables/><comment>hi</comment></xml>"]
)
def test_empty_workspaces_are_the_empty_program(xml: str) -> None:
    tree = parse_workspace(xml)
    assert (tree.n_blocks, tree.n_stacks, tree.label_tree_size) == (0, 0, 1)
    assert tree.outline() == "ROOT"


@pytest.mark.parametrize(
    "xml",
    [
        "hello",
        "<xml>",
        "<xml><block type='a'></xml>",
        "<xml/><xml/>",
        "<xml><block type='a'></next></block></xml>",
        "<xml>&#1;</xml>",
        '{"workspace": 1}',
        '<xml><block type="a" id="x></block></xml>',
    ],
)
def test_malformed_xml_raises_one_typed_error(xml: str) -> None:
    with pytest.raises(WorkspaceError) as caught:
        parse_workspace(xml)
    assert caught.value.reason is UnusableReason.XML_ERROR
    assert isinstance(caught.value, TreeEditError)
    assert "xml_error" in str(caught.value) and "line 1" in caught.value.detail


def test_lone_surrogates_are_an_xml_error() -> None:
    # json.loads('"\\ud800"') yields a lone surrogate, which no XML document can hold.
    with pytest.raises(WorkspaceError) as caught:
        parse_workspace("<xml><block type='a\ud800'/></xml>")
    assert caught.value.reason is UnusableReason.XML_ERROR


def test_namespaces_are_ignored_including_prefixes() -> None:
    plain = parse_workspace("<xml><block type='a'><field name='F'>1</field></block></xml>")
    prefixed = parse_workspace(
        "<b:xml xmlns:b='urn:x'><b:block type='a'><b:field name='F'>1</b:field></b:block></b:xml>"
    )
    assert plain.outline() == prefixed.outline() == "ROOT(a|F=1)"


def test_any_document_element_is_accepted() -> None:
    # Only well-formedness makes a workspace unusable; the document element's
    # name is not checked, and only its direct <block> children are stacks.
    assert parse_workspace("<workspace><block type='a'/></workspace>").outline() == "ROOT(a)"
    assert parse_workspace("<block type='a'><next><block type='b'/></next></block>").outline() == "ROOT"


def test_top_level_non_blocks_are_ignored() -> None:
    assert (
        outline(
            "<variables><variable>v</variable></variables><shadow type='math_number'/>"
            "<comment>c</comment><block type='a'/>"
        )
        == "ROOT(a)"
    )


def test_own_fields_sorted_stripped_last_wins_and_unnamed_skipped() -> None:
    assert (
        outline(
            "<block type='t'><field name='Z'> 1 </field><field name='A'>x</field>"
            "<field name='Z'>2</field><field>lost</field><field name=''>lost</field>"
            "<field name='E'/></block>"
        )
        == "ROOT(t|A=x|E=|Z=2)"
    )


def test_missing_type_is_unknown() -> None:
    assert outline("<block id='1'/>") == "ROOT(unknown)"


def test_shadow_entries_nested_and_last_value_wins() -> None:
    body = (
        "<block type='t'><field name='F'>f</field>"
        "<value name='N'><shadow type='s'><field name='A'>1</field>"
        "<value name='M'><shadow type='s'><field name='B'>2</field>"
        "<value name='K'><shadow type='s'><field name='C'>3</field></shadow></value>"
        "</shadow></value><field name='A'>4</field></shadow></value>"
        "<value name='EMPTY'/></block>"
    )
    assert outline(body) == "ROOT(t|F=f|N.A=4|N.M.B=2|N.M.K.C=3)"


def test_real_block_in_a_value_hides_its_shadow() -> None:
    body = (
        "<block type='wait'><value name='D'><shadow type='math_number'>"
        "<field name='NUM'>9</field></shadow><block type='r'/></value></block>"
    )
    assert outline(body) == "ROOT(wait(value:D(r)))"


def test_statement_and_next_without_blocks_add_nothing() -> None:
    body = (
        "<block type='t'><statement name='S'><shadow type='x'><field name='F'>1</field>"
        "</shadow></statement><next><shadow type='x'/></next></block>"
    )
    assert outline(body) == "ROOT(t)"


def test_children_order_values_then_statements_then_next() -> None:
    body = (
        "<block type='t'><next><block type='n'/></next>"
        "<statement name='S1'><block type='s1'/></statement>"
        "<value name='V1'><block type='v1'/></value>"
        "<statement name='S2'><block type='s2'/></statement>"
        "<value><block type='v2'/></value></block>"
    )
    assert outline(body) == ("ROOT(t(value:V1(v1), value:(v2), statement:S1(s1), statement:S2(s2), next(n)))")


def test_several_blocks_in_one_input_each_get_a_connector() -> None:
    body = "<block type='t'><statement name='S'><block type='a'/><block type='b'/></statement></block>"
    tree = parse_workspace(f"<xml>{body}</xml>")
    assert tree.outline() == "ROOT(t(statement:S(a), statement:S(b)))"
    assert (tree.n_blocks, tree.label_tree_size) == (3, 6)


def test_ids_positions_mutations_comments_and_data_never_count() -> None:
    a = parse_workspace(
        "<xml><block type='t' id='1' x='1' y='2'><mutation items='3'/><comment>c</comment>"
        "<data>d</data><field name='F'>v</field><value name='N'>"
        "<shadow type='math_number' id='s1'><field name='NUM'>1</field></shadow></value>"
        "</block></xml>"
    )
    b = parse_workspace(
        "<xml><block type='t' id='2' x='9' y='9' collapsed='true'><field name='F'>v</field>"
        "<value name='N'><shadow type='other' id='s2'><field name='NUM'>1</field></shadow>"
        "</value></block></xml>"
    )
    assert a.outline() == b.outline() and a.digest == b.digest
    assert a.same_program(b) and distance(a, b) == 0


def test_label_keys_tell_own_fields_from_shadow_entries() -> None:
    # Same canonical text, different labels: an own field named "A.NUM" is not
    # the shadow entry A.NUM.
    own = parse_workspace("<xml><block type='t'><field name='A.NUM'>1</field></block></xml>")
    shadow = parse_workspace(
        "<xml><block type='t'><value name='A'><shadow type='n'><field name='NUM'>1</field>"
        "</shadow></value></block></xml>"
    )
    assert own.outline() == shadow.outline() == "ROOT(t|A.NUM=1)"
    assert distance(own, shadow) == 1


def test_deep_programs_parse_without_recursion() -> None:
    depth = 5000
    xml = "<xml>" + "<block type='d'><next>" * depth + "</next></block>" * depth + "</xml>"
    tree = parse_workspace(xml)
    assert (tree.n_blocks, tree.n_stacks, tree.label_tree_size) == (depth, 1, 2 * depth)
    assert tree.outline().count("next(") == depth - 1


def test_tree_repr_is_short() -> None:
    tree = parse_workspace(README_EXAMPLE)
    assert repr(tree) == "Tree(n_blocks=3, n_stacks=2, label_tree_size=5)"
    assert repr(tree.root) == "Node(root, 'ROOT', 2 children)"
