"""The layering a newcomer can see, enforced (imports inside functions too):

* ``tree_edit/`` imports nothing of the product;
* ``topology/`` (the ground: settings, topics, schemas, the Faust app factory
  and the Faust seam) imports no domain package and not the root;
* the domain packages (``streams/``, ``feedback/``, ``delivery/``) import the
  ground and each other, never the root;
* ``vexnudge/`` (the composition root) may import everything.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from topology.settings import PROJECT_ROOT

PRODUCT = ("vexnudge", "topology", "streams", "feedback", "delivery", "tree_edit")
ALLOWED: dict[str, frozenset[str]] = {
    "tree_edit": frozenset({"tree_edit"}),
    "topology": frozenset({"topology"}),
    "streams": frozenset({"streams", "feedback", "delivery", "topology", "tree_edit"}),
    "feedback": frozenset({"streams", "feedback", "delivery", "topology", "tree_edit"}),
    "delivery": frozenset({"streams", "feedback", "delivery", "topology", "tree_edit"}),
    "vexnudge": frozenset(PRODUCT),
}


def product_imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level package) of every import of a product package in ``path``, anywhere."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        found += [(node.lineno, n.split(".")[0]) for n in names if n.split(".")[0] in PRODUCT]
    return found


def modules(package: str) -> list[Path]:
    return sorted((PROJECT_ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", list(ALLOWED))
def test_each_layer_imports_only_what_it_may(package: str) -> None:
    wrong = [
        f"{path.relative_to(PROJECT_ROOT)}:{line} imports {name}"
        for path in modules(package)
        for line, name in product_imports(path)
        if name not in ALLOWED[package]
    ]
    assert not wrong, "\n".join(wrong)


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from vexnudge.cli import main\n    import streams.engine\n")
    assert product_imports(module) == [(2, "vexnudge"), (3, "streams")]


def test_every_product_package_is_covered() -> None:
    packages = {p.parent.name for p in PROJECT_ROOT.glob("*/__init__.py")} - {"tests", "bench"}
    assert packages == set(ALLOWED)
