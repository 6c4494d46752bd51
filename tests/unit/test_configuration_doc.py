"""docs/configuration.md lists every setting with its current default."""

from __future__ import annotations

from topology.settings import PROJECT_ROOT, Settings
from vexnudge.cli.settings_cmd import markdown


def test_configuration_doc_is_up_to_date() -> None:
    doc = (PROJECT_ROOT / "docs" / "configuration.md").read_text()
    assert markdown() in doc, "regenerate with: vexnudge settings --markdown"
    for name in Settings.model_fields:
        assert f"`{name.upper()}`" in doc
