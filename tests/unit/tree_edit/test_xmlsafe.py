"""Untrusted XML: declarations refused before anything is expanded; the C parser
where no declaration can exist; a warning for an old libexpat."""

from __future__ import annotations

import pyexpat

import pytest

from tree_edit import WorkspaceError, parse_workspace, xmlsafe
from tree_edit.xmlsafe import XmlRefused, expat_warning, parse_xml


@pytest.mark.parametrize(
    "xml",
    [
        "<!DOCTYPE xml><xml/>",
        '<!DOCTYPE xml [<!ENTITY a "b">]><xml>&a;</xml>',
        '<?xml version="1.0"?>\n<!DOCTYPE xml SYSTEM "http://127.0.0.1/x.dtd"><xml/>',
        '<!DOCTYPE xml [<!ENTITY x SYSTEM "file:///etc/passwd">]><xml>&x;</xml>',
    ],
)
def test_declarations_are_refused(xml: str) -> None:
    with pytest.raises(XmlRefused):
        parse_xml(xml)
    with pytest.raises(WorkspaceError) as info:
        parse_workspace(xml)
    assert info.value.reason.value == "xml_error"


def test_comments_and_cdata_still_parse_through_the_safe_parser() -> None:
    xml = '<xml><!-- note --><block type="a"><field name="F"><![CDATA[1 < 2]]></field></block></xml>'
    root = parse_xml(xml)
    assert [el.get("type") for el in root] == ["a"]
    assert parse_workspace(xml).n_blocks == 1


def test_an_undeclared_entity_is_not_well_formed() -> None:
    with pytest.raises(WorkspaceError):
        parse_workspace("<xml>&undeclared;</xml>")


def test_old_libexpat_is_warned_about(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pyexpat, "version_info", (2, 5, 0))
    assert "2.5.0" in (expat_warning() or "")
    monkeypatch.setattr(pyexpat, "version_info", xmlsafe.SAFE_EXPAT)
    assert expat_warning() is None


def test_commands_that_read_telemetry_check_libexpat_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    from vexnudge.cli import startup_warnings

    monkeypatch.setattr(pyexpat, "version_info", (2, 5, 0))
    assert startup_warnings("worker") and startup_warnings("gateway")
    assert startup_warnings("settings_cmd") == [] and startup_warnings(None) == []
