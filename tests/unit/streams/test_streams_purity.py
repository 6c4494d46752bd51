"""The stream processors' cores import no Kafka, web, database or model code.

Only the adapters (``streams/agents/``) and the in-process driver's scorer
wiring may; the cores take plain typed values and return typed values.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.unit.feedback.test_feedback_purity import FORBIDDEN, imported_roots
from topology.settings import PROJECT_ROOT

CORES = (
    "config",
    "dedupe",
    "engine",
    "episodes",
    "ids",
    "inactivity",
    "ingest",
    "local",
    "metrics",
    "nudging",
    "programs",
    "replayclock",
    "runs",
    "scoring",
    "screen",
    "deadletters",
    "state",
    "student_view",
    "summary",
    "timeutil",
)
ALLOWED = {"streams", "topology", "feedback", "tree_edit", "orjson", "pydantic"}


@pytest.mark.parametrize("name", CORES)
def test_core_imports_only_pure_packages(name: str) -> None:
    roots = imported_roots(PROJECT_ROOT / "streams" / f"{name}.py")
    assert not roots & FORBIDDEN
    assert roots - set(sys.stdlib_module_names) - ALLOWED == set()


def test_importing_the_cores_loads_no_io_library() -> None:
    modules = ", ".join(f"streams.{n}" for n in CORES)
    code = (
        f"import sys, importlib\nfor m in '{modules}'.split(', '): importlib.import_module(m)\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & set(sys.argv[1:])))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *sorted(FORBIDDEN)], capture_output=True, text=True, check=True, cwd=PROJECT_ROOT
    )
    assert out.stdout.strip() == "[]"
