"""Pytest fixtures around the fake Ollama server.

Use them from a test module by importing them (pytest finds imported fixtures)::

    from tests.fakes.fixtures import fake_ollama  # noqa: F401

    async def test_something(fake_ollama: FakeOllama) -> None:  # noqa: F811

or wrap :func:`tests.fakes.ollama_server.serve` in a local fixture.

- ``fake_ollama`` (async, per test): a :class:`FakeOllama` served in-process on
  a free port; ``fake_ollama.url`` is the ``OLLAMA_HOST`` to use.
- ``fake_ollama_process`` (per test): the same server as a subprocess (for
  worker subprocesses); yields its base URL; control it over HTTP
  (``POST {url}/_control``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from tests.fakes.ollama_server import FakeOllama, serve
from tests.fakes.process import fake_ollama_subprocess


@pytest.fixture
async def fake_ollama() -> AsyncIterator[FakeOllama]:
    """A started in-process fake Ollama (mode ``ok``)."""
    async with serve() as fake:
        yield fake


@pytest.fixture
def fake_ollama_process() -> Iterator[str]:
    """A fake Ollama subprocess (mode ``ok``); yields its base URL."""
    with fake_ollama_subprocess() as url:
        yield url
