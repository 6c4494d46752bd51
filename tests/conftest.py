"""Root fixtures: the local stack (a real Kafka broker and PostgreSQL) and unique names.

- ``stack`` (session): runs the project's own ``stack up`` code, a no-op when the
  stack already runs (``scripts/test.sh`` starts it first), checks with real
  clients that the broker and the database answer, and yields the
  :class:`~topology.settings.Settings` pointing at them.  A stack that this
  fixture started is stopped at the end of the session unless KEEP_STACK=1.
- ``unique_prefix`` (function): ``t-<8 hex>.`` for ``TOPIC_PREFIX`` and app ids,
  so tests never share (or delete) each other's topics; a test that used the
  broker has its topics deleted afterwards.

Every test that uses ``stack`` is an integration test: it gets the
``integration`` marker automatically if it lacks it, so ``-m "not integration"``
never starts the stack.
"""

from __future__ import annotations

import asyncio
import uuid
import warnings
from collections.abc import Iterator

import pytest

from topology.settings import Settings, load_settings


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "stack" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("integration"):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def stack() -> Iterator[Settings]:
    """The running local stack's settings (bootstrap servers, database URL)."""
    from delivery.migrate import MigrationError
    from vexnudge.stack import lifecycle
    from vexnudge.stack.errors import StackError
    from vexnudge.stack.report import Reporter

    settings = load_settings()
    try:
        result = lifecycle.up(settings, Reporter())
        asyncio.run(lifecycle.wait_answering(settings, timeout_s=30.0))
    except (StackError, MigrationError) as exc:
        pytest.fail(f"the local stack is not usable: {exc}", pytrace=False)
    try:
        yield settings
    finally:
        if result.started and not settings.keep_stack:
            lifecycle.down(settings, Reporter(), only=result.started)


@pytest.fixture
def unique_prefix(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh ``t-<8 hex>.`` prefix for topic names, app ids and consumer groups.

    After a test that used the broker, every topic named from the prefix (its
    own topics, its apps' changelogs) is deleted: a broker left with hundreds
    of test topics spends a fair part of a core on them.
    """
    stem = f"t-{uuid.uuid4().hex[:8]}"
    yield stem + "."
    if "stack" in request.fixturenames:
        asyncio.run(_delete_topics_of(request.getfixturevalue("stack"), stem))


async def _delete_topics_of(settings: Settings, stem: str) -> None:
    from topology.kafka_admin import delete_topics_where

    try:
        await delete_topics_where(settings, lambda name: name.startswith(stem))
    except Exception as exc:  # noqa: BLE001 - cleanup only: say so, never fail the test for it
        warnings.warn(f"could not delete the topics of {stem}: {exc}", stacklevel=1)


@pytest.fixture
def close_stray_loops() -> Iterator[None]:
    """Close the event loops a test left open behind its back.

    Building a Faust app makes event loops of its own (mode and Faust call
    ``asyncio.get_event_loop()`` while services are declared) that nothing in the
    test owns; with warnings as errors, their sockets would fail a later test.
    Used by the modules that build apps in-process, not as a blanket cleanup.
    """
    import gc

    yield
    for loop in [o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop)]:
        if not loop.is_running() and not loop.is_closed():
            loop.close()


@pytest.fixture
def student() -> str:
    """A fresh student key, so tests sharing a database never see each other's rows."""
    return f"st-{uuid.uuid4().hex[:10]}"
