"""Versioned schema migrations for PostgreSQL (asyncpg).

A migration is a file ``NNNN_name.sql`` in the :mod:`delivery.migrations`
package (shipped as package data).  Adding the next file is all it takes.

Invariants:

- Applied migrations are recorded in ``schema_migrations`` (version, name,
  SHA-256 checksum of the text with normalised line endings, applied_at).
- Each migration runs in one transaction together with its bookkeeping row, so
  it is applied entirely or not at all.  (So no ``CREATE INDEX CONCURRENTLY``.)
- Re-running is a no-op.  Concurrent runners serialise on an advisory lock.
- An applied migration whose file has since changed is refused with
  :class:`ChecksumMismatch`: applied migrations are immutable.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncpg

MIGRATIONS_PACKAGE = "delivery.migrations"
DEFAULT_TABLE = "public.schema_migrations"
_FILE_RE = re.compile(r"^(?P<version>\d{4,})_(?P<slug>[a-z0-9][a-z0-9_]*)\.sql$")
_IDENT_RE = re.compile(r"^[a-z_][a-z0-9_]*$")


class MigrationError(Exception):
    """The migrations cannot be applied; the message says why and what to do."""


class BadMigrationSet(MigrationError):
    """Badly named or duplicate migration files."""


class ChecksumMismatch(MigrationError):
    """A migration changed after it was applied."""


@dataclass(frozen=True)
class Migration:
    """One migration file."""

    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return checksum(self.sql)


@dataclass
class MigrationReport:
    """What a run did."""

    applied: list[str] = field(default_factory=list)
    already_applied: int = 0
    unknown_versions: list[int] = field(default_factory=list)
    """Versions recorded in the database with no file here (a newer checkout applied them)."""

    def summary(self) -> str:
        done = ", ".join(self.applied) if self.applied else "nothing new"
        text = f"applied {done}; {self.already_applied} already applied"
        if self.unknown_versions:
            text += f"; the database also has {self.unknown_versions} that this checkout lacks"
        return text


def checksum(sql: str) -> str:
    """SHA-256 of the migration text, line endings normalised to ``\\n``."""
    return hashlib.sha256(sql.replace("\r\n", "\n").encode()).hexdigest()


def parse_name(filename: str) -> tuple[int, str]:
    """``("0002_chat_messages.sql")`` → ``(2, "0002_chat_messages")``.

    :raises BadMigrationSet: when the name does not follow ``NNNN_name.sql``.
    """
    match = _FILE_RE.match(filename)
    if not match:
        raise BadMigrationSet(
            f"migration file {filename!r} is not named NNNN_lower_case_name.sql "
            "(four or more digits, an underscore, lower-case letters, digits and underscores)"
        )
    return int(match.group("version")), filename[: -len(".sql")]


def load_migrations(source: Traversable | Path | None = None) -> list[Migration]:
    """The migrations in ``source`` (default: the shipped package), ordered by version.

    Non-``.sql`` files are ignored; every ``.sql`` file must be a well-named migration.

    :raises BadMigrationSet: on a bad name or two files with the same version.
    """
    folder = source if source is not None else resources.files(MIGRATIONS_PACKAGE)
    found: dict[int, Migration] = {}
    for entry in folder.iterdir():
        if not entry.name.endswith(".sql"):
            continue
        version, name = parse_name(entry.name)
        if version in found:
            raise BadMigrationSet(f"two migrations have version {version}: {found[version].name}.sql and {entry.name}")
        found[version] = Migration(version, name, entry.read_text(encoding="utf-8"))
    return [found[v] for v in sorted(found)]


def plan(migrations: Sequence[Migration], applied: Mapping[int, str]) -> list[Migration]:
    """The migrations still to apply, given ``{version: checksum}`` already applied.

    :raises ChecksumMismatch: when an applied migration's file has changed.
    """
    pending = []
    for migration in migrations:
        recorded = applied.get(migration.version)
        if recorded is None:
            pending.append(migration)
        elif recorded != migration.checksum:
            raise ChecksumMismatch(
                f"migration {migration.name}.sql was changed after it was applied "
                f"(recorded checksum {recorded[:12]}…, file now {migration.checksum[:12]}…). "
                "Applied migrations are immutable: revert the edit and put the change in a new "
                "migration with the next number. On the throwaway local stack, "
                "`vexnudge stack up --fresh --only postgres` rebuilds the database instead."
            )
    return pending


def unknown_versions(migrations: Iterable[Migration], applied: Mapping[int, str]) -> list[int]:
    """Applied versions that have no migration file here."""
    return sorted(set(applied) - {m.version for m in migrations})


def quote_table(table: str) -> str:
    """``"schema"."table"`` from ``schema.table`` (lower-case identifiers only)."""
    parts = table.split(".")
    if not 1 <= len(parts) <= 2 or not all(_IDENT_RE.match(p) for p in parts):
        raise ValueError(f"bad migrations table name {table!r}")
    return ".".join(f'"{p}"' for p in parts)


def lock_key(table: str) -> int:
    """The advisory-lock key that serialises runners of one migrations table."""
    digest = hashlib.sha256(f"vexnudge-migrations:{table}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


async def migrate(
    conn: asyncpg.Connection,
    migrations: Sequence[Migration] | None = None,
    table: str = DEFAULT_TABLE,
) -> MigrationReport:
    """Apply the pending migrations on ``conn``; idempotent.

    :param migrations: default: the shipped ones (:func:`load_migrations`).
    :param table: the bookkeeping table, ``schema.table``; its schema must exist.
    :raises ChecksumMismatch: when an applied migration has changed (nothing is applied).
    """
    todo = list(migrations) if migrations is not None else load_migrations()
    qualified, key = quote_table(table), lock_key(table)
    await conn.execute("select pg_advisory_lock($1)", key)
    try:
        await conn.execute(
            f"create table if not exists {qualified} ("
            " version integer primary key, name text not null, checksum text not null,"
            " applied_at timestamptz not null default now())"
        )
        rows = await conn.fetch(f"select version, checksum from {qualified}")
        applied = {r["version"]: r["checksum"] for r in rows}
        pending = plan(todo, applied)
        report = MigrationReport(
            already_applied=len(todo) - len(pending),
            unknown_versions=unknown_versions(todo, applied),
        )
        for migration in pending:
            await _apply(conn, qualified, migration)
            report.applied.append(migration.name)
        return report
    finally:
        await conn.execute("select pg_advisory_unlock($1)", key)


async def _apply(conn: asyncpg.Connection, qualified: str, migration: Migration) -> None:
    """Run one migration and record it, in one transaction."""
    import asyncpg

    try:
        async with conn.transaction():
            await conn.execute(migration.sql)
            await conn.execute(
                f"insert into {qualified} (version, name, checksum) values ($1, $2, $3)",
                migration.version,
                migration.name,
                migration.checksum,
            )
    except asyncpg.PostgresError as exc:
        raise MigrationError(
            f"migration {migration.name}.sql failed and was rolled back: {type(exc).__name__}: {exc}"
        ) from exc


async def migrate_url(
    database_url: str,
    migrations: Sequence[Migration] | None = None,
    table: str = DEFAULT_TABLE,
    timeout_s: float = 10.0,
) -> MigrationReport:
    """:func:`migrate` on a fresh connection to ``database_url``."""
    import asyncpg

    conn = await asyncpg.connect(database_url, timeout=timeout_s)
    try:
        return await migrate(conn, migrations, table)
    finally:
        await conn.close()
