"""Root fixtures: the local stack (a real Kafka broker and PostgreSQL) and unique names.

- ``stack`` (session): runs the project's own ``stack up`` code, a no-op when the
  stack already runs (``scripts/test.sh`` starts it first), checks with real
  clients that the broker and the database answer, and yields the
  :class:`~topology.settings.Settings` pointing at them.  A stack that this
  fixture started is stopped at the end of the session unless KEEP_STACK=1.
- ``unique_prefix`` (function): ``t-<8 hex>.`` for ``TOPIC_PREFIX`` and app ids,
  so tests never share (or delete) topics.

Every test that uses ``stack`` is an integration test: it gets the
``integration`` marker automatically if it lacks it, so ``-m "not integration"``
never starts the stack.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from topology.settings import Settings, load_settings


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "stack" in getattr(item, "fixturenames", ()) and not item.get_closest_marker(
            "integration"
        ):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def stack() -> Iterator[Settings]:
    """The running local stack's settings (bootstrap servers, database URL)."""
    from delivery.migrate import MigrationError
    from topology.stack import lifecycle
    from topology.stack.errors import StackError
    from topology.stack.report import Reporter

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
def unique_prefix() -> str:
    """A fresh ``t-<8 hex>.`` prefix for topic names, app ids and consumer groups."""
    return f"t-{uuid.uuid4().hex[:8]}."
