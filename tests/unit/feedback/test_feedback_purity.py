"""The pure feedback core imports no Kafka, HTTP, Postgres or model-client code."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from topology.settings import PROJECT_ROOT

FORBIDDEN = frozenset(
    {
        "faust",
        "mode",
        "aiokafka",
        "kafka",
        "confluent_kafka",
        "aiohttp",
        "asyncpg",
        "psycopg",
        "psycopg2",
        "ollama",
        "openai",
        "httpx",
        "requests",
        "urllib3",
        "rocksdict",
        "delivery",
    }
)
ALLOWED_PROJECT = frozenset({"feedback", "topology", "streams", "tree_edit"})  # tree_edit is pure too
#: Adapter modules that may talk to a model server (not part of the pure core).
ADAPTERS = ("llm", "service.py", "generate.py", "factory.py")


def pure_modules() -> list[Path]:
    files = sorted((PROJECT_ROOT / "feedback").rglob("*.py"))
    pure = [f for f in files if not f.name.startswith(ADAPTERS)]
    return [*pure, PROJECT_ROOT / "streams" / "metrics.py"]


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("path", pure_modules(), ids=lambda p: str(p.relative_to(PROJECT_ROOT)))
def test_imports_are_stdlib_or_our_pure_packages(path: Path) -> None:
    roots = imported_roots(path)
    assert not roots & FORBIDDEN
    outside = roots - set(sys.stdlib_module_names) - ALLOWED_PROJECT
    assert outside == set(), f"{path.name} imports {sorted(outside)}"


def test_topology_imports_are_schemas_and_settings_only() -> None:
    for path in pure_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("topology"):
                assert node.module.startswith(("topology.schemas", "topology.settings")), path


def test_importing_the_core_loads_no_io_library() -> None:
    names = sorted(".".join(p.relative_to(PROJECT_ROOT).with_suffix("").parts) for p in pure_modules())
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n    importlib.import_module(name)\n"
        f"print(sorted(m for m in {sorted(FORBIDDEN)!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
