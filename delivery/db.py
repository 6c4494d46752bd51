"""The PostgreSQL connection pool (asyncpg), built from the settings.

Every connection of the pool decodes and encodes ``json``/``jsonb`` with
orjson (Python dicts and lists in, out; a U+0000 in a string is stored as
U+FFFD, see :mod:`delivery.repo.codec`), and has a default statement timeout
(``DB_COMMAND_TIMEOUT_S``).  Create the pool once per process in a lifecycle
hook — :func:`open_pool` is the async context manager for that — and pass
it (or a connection acquired from it) to the repositories in
:mod:`delivery.repo`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeAlias

import asyncpg
import orjson

from delivery.repo.codec import storable_json
from topology.settings import Settings

#: A pool or one connection: both run statements (reads and autocommit writes).
Executor: TypeAlias = "asyncpg.Pool | asyncpg.Connection"
#: Extra per-connection setup, run after the codecs are installed.
InitHook = Callable[["asyncpg.Connection"], Awaitable[None]]


def _encode_json(value: Any) -> str:
    return storable_json(orjson.dumps(value))


async def init_connection(conn: asyncpg.Connection) -> None:
    """Install the orjson codecs for ``json`` and ``jsonb`` on ``conn``."""
    for name in ("json", "jsonb"):
        await conn.set_type_codec(name, schema="pg_catalog", encoder=_encode_json, decoder=orjson.loads, format="text")


async def create_pool(
    settings: Settings,
    *,
    min_size: int | None = None,
    max_size: int | None = None,
    init: InitHook | None = None,
) -> asyncpg.Pool:
    """A started pool on ``DATABASE_URL``.

    :param min_size: connections kept open (default ``DB_POOL_MIN_SIZE``).
    :param max_size: most connections (default ``DB_POOL_MAX_SIZE``).
    :param init: extra setup for each new connection, after the JSON codecs.
    :raises OSError, asyncpg.PostgresError: when the database cannot be reached.
    """

    async def setup(conn: asyncpg.Connection) -> None:
        await init_connection(conn)
        if init is not None:
            await init(conn)

    low = settings.db_pool_min_size if min_size is None else min_size
    high = settings.db_pool_max_size if max_size is None else max_size
    pool = await asyncpg.create_pool(
        dsn=settings.database_url.get_secret_value(),
        min_size=min(low, high),
        max_size=high,
        command_timeout=settings.db_command_timeout_s,
        init=setup,
    )
    assert pool is not None  # create_pool returns the started pool
    return pool


@asynccontextmanager
async def open_pool(
    settings: Settings,
    *,
    min_size: int | None = None,
    max_size: int | None = None,
    init: InitHook | None = None,
) -> AsyncIterator[asyncpg.Pool]:
    """``async with open_pool(settings) as pool:`` — the pool, closed on exit."""
    pool = await create_pool(settings, min_size=min_size, max_size=max_size, init=init)
    try:
        yield pool
    finally:
        await pool.close()
