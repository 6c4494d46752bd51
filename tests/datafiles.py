"""Where the test data lives: ``tests/data/fixtures`` (a copy of the shared
fixtures), falling back to ``../shared/fixtures`` beside the project."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
_LOCAL = HERE / "data" / "fixtures"
_SHARED = HERE.parent.parent / "shared" / "fixtures"
FIXTURES = _LOCAL if (_LOCAL / "golden").is_dir() else _SHARED

SAMPLE_CLASSROOM = FIXTURES / "sample_classroom.ndjson"
SAMPLE_MALFORMED = FIXTURES / "sample_malformed.ndjson"
MALFORMED_DEFECTS = FIXTURES / "sample_malformed.defects.json"


def reference_logs() -> list[Path]:
    """The 27 reference fixture logs, sorted by name."""
    return sorted((FIXTURES / "reference").glob("*.ndjson"))


def golden_for(log: Path) -> dict[str, Any]:
    """The golden answer of a fixture log."""
    if log.parent.name == "reference":
        path = FIXTURES / "golden" / "reference" / (log.stem + ".json")
    else:
        path = FIXTURES / "golden" / (log.stem + ".json")
    return json.loads(path.read_text())


def all_logs() -> list[Path]:
    """Every fixture log that has a golden file."""
    return [SAMPLE_CLASSROOM, SAMPLE_MALFORMED, *reference_logs()]
