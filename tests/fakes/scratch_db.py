"""Throwaway databases on the real PostgreSQL server of the local stack.

Not a fake: a real database with the real migrations, created for one test
module (or one benchmark run) and dropped afterwards, so that sweeps over
"every pending row" see only that module's rows.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import asyncpg
from pydantic import SecretStr

from delivery.migrate import migrate_url
from topology.settings import Settings


def _with_database(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


async def _admin(url: str, sql: str) -> None:
    conn = await asyncpg.connect(url, timeout=10)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@contextmanager
def scratch_database(settings: Settings, prefix: str = "vexnudge_t") -> Iterator[Settings]:
    """Create ``<prefix>_<hex>`` with every migration applied; yield settings that use it; drop it.

    The role of ``DATABASE_URL`` needs CREATEDB (the local stack's role has it).
    """
    main_url = settings.database_url.get_secret_value()
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    asyncio.run(_admin(main_url, f'create database "{name}"'))
    url = _with_database(main_url, name)
    try:
        asyncio.run(migrate_url(url))
        yield settings.model_copy(update={"database_url": SecretStr(url)})
    finally:
        asyncio.run(_admin(main_url, f'drop database if exists "{name}" with (force)'))
