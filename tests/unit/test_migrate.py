"""The pure parts of the migration runner: naming, loading, checksums and planning.

The runner against a real database is in tests/integration/test_stack.py.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from delivery.migrate import (
    BadMigrationSet,
    ChecksumMismatch,
    Migration,
    checksum,
    load_migrations,
    lock_key,
    parse_name,
    plan,
    quote_table,
    unknown_versions,
)
from topology.settings import PROJECT_ROOT


def _write(folder: Path, **files: str) -> Path:
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_names_follow_nnnn_name_sql() -> None:
    assert parse_name("0001_init.sql") == (1, "0001_init")
    assert parse_name("0012_chat_messages.sql") == (12, "0012_chat_messages")
    assert parse_name("10000_far_future.sql") == (10000, "10000_far_future")
    for bad in (
        "1_init.sql",
        "0001-init.sql",
        "0001_Init.sql",
        "0001_.sql",
        "init.sql",
        "0001_init.SQL",
    ):
        with pytest.raises(BadMigrationSet):
            parse_name(bad)


def test_loading_orders_by_version_and_ignores_other_files(tmp_path: Path) -> None:
    _write(
        tmp_path,
        **{
            "0010_b.sql": "select 10;",
            "0002_a.sql": "select 2;",
            "README.md": "x",
            "0001_first.sql": "select 1;",
        },
    )
    loaded = load_migrations(tmp_path)
    assert [(m.version, m.name) for m in loaded] == [
        (1, "0001_first"),
        (2, "0002_a"),
        (10, "0010_b"),
    ]
    assert loaded[0].sql == "select 1;"


def test_a_badly_named_sql_file_is_an_error_not_skipped(tmp_path: Path) -> None:
    _write(tmp_path, **{"0001_ok.sql": "", "2_oops.sql": ""})
    with pytest.raises(BadMigrationSet, match=r"2_oops\.sql"):
        load_migrations(tmp_path)


def test_two_files_with_one_version_are_an_error(tmp_path: Path) -> None:
    _write(tmp_path, **{"0002_one.sql": "", "0002_two.sql": ""})
    with pytest.raises(BadMigrationSet, match="two migrations have version 2"):
        load_migrations(tmp_path)


def test_checksum_ignores_line_endings_only() -> None:
    assert checksum("a;\r\nb;\n") == checksum("a;\nb;\n")
    assert checksum("a;\n") != checksum("a; \n")
    assert len(checksum("")) == 64


def _migrations(*versions: int) -> list[Migration]:
    return [Migration(v, f"{v:04d}_m{v}", f"select {v};") for v in versions]


def test_plan_returns_what_is_not_applied_in_order() -> None:
    todo = _migrations(1, 2, 3)
    assert plan(todo, {}) == todo
    assert plan(todo, {1: todo[0].checksum}) == todo[1:]
    assert plan(todo, {m.version: m.checksum for m in todo}) == []


def test_plan_applies_a_gap_left_by_a_merged_branch() -> None:
    todo = _migrations(1, 2, 3)
    assert plan(todo, {1: todo[0].checksum, 3: todo[2].checksum}) == [todo[1]]


def test_plan_refuses_a_changed_applied_migration_with_the_fix() -> None:
    todo = _migrations(1, 2)
    with pytest.raises(ChecksumMismatch) as caught:
        plan(todo, {1: "0" * 64})
    message = str(caught.value)
    assert "0001_m1.sql was changed after it was applied" in message
    assert "new migration" in message and "--fresh" in message


def test_unknown_versions_are_reported() -> None:
    assert unknown_versions(_migrations(1, 2), {1: "x", 2: "y", 7: "z"}) == [7]


def test_table_names_are_validated_and_quoted() -> None:
    assert quote_table("public.schema_migrations") == '"public"."schema_migrations"'
    assert quote_table("schema_migrations") == '"schema_migrations"'
    for bad in ("a.b.c", "Public.x", "x;drop", "", "a."):
        with pytest.raises(ValueError):
            quote_table(bad)


def test_lock_key_is_stable_per_table_and_fits_bigint() -> None:
    key = lock_key("public.schema_migrations")
    assert key == lock_key("public.schema_migrations") != lock_key("t_1.schema_migrations")
    assert -(2**63) <= key < 2**63


def test_shipped_migrations_start_with_the_schemas() -> None:
    shipped = load_migrations()
    assert shipped[0].name == "0001_init"
    assert [m.version for m in shipped] == sorted({m.version for m in shipped})
    sql = shipped[0].sql.lower()
    assert "create schema if not exists chat;" in sql
    assert "create schema if not exists event_logs;" in sql


def test_migrations_ship_as_package_data() -> None:
    config = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    assert "*.sql" in config["tool"]["setuptools"]["package-data"]["*"]
    assert (PROJECT_ROOT / "delivery" / "migrations" / "__init__.py").is_file()
