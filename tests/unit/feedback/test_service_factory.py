"""One factory builds the feedback service, and the service alone makes a request durable."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import pytest

from feedback.factory import build_service
from feedback.llm import LLMAnswer, OllamaClient
from topology.settings import PROJECT_ROOT, load_settings

#: The repository writes that store a pending fire or a question.
DURABLE_WRITES = frozenset({"record_trigger", "record_question", "store_question"})
#: Where they may be called: their repositories and the feedback service.
OWNERS = ("delivery/repo/", "feedback/service.py")
PRODUCT = ("vexnudge", "topology", "streams", "feedback", "delivery")
#: The names the repositories are imported under.
REPOSITORIES = frozenset({"triggers", "requests", "outbox", "repo_triggers", "repo_requests", "repo_outbox"})


async def _publish(record: Any) -> None:
    return None


class _Model:
    async def complete(self, prompt: str) -> LLMAnswer:
        raise AssertionError("not called")


def test_the_service_takes_every_tunable_from_the_settings() -> None:
    settings = load_settings(
        llm_fallback_template=False,
        feedback_max_attempts=7,
        feedback_retry_after_s=3.0,
        feedback_retry_max_delay_s=40.0,
        llm_concurrency=2,
        ollama_model="m1",
        llm_timeout_s=9.0,
        llm_max_retries=1,
    )
    service = build_service(settings, pool=object(), publish=_publish)  # type: ignore[arg-type]
    assert (
        service.fallback,
        service.max_attempts,
        service.retry_after_s,
        service.max_delay_s,
        service.retry_workers,
    ) == (False, 7, 3.0, 40.0, 2)
    assert isinstance(service.llm, OllamaClient)
    assert (service.llm.model, service.llm.timeout_s, service.llm.max_retries) == ("m1", 9.0, 1)
    asyncio.run(service.aclose())


def test_a_host_may_bring_its_own_model_or_none() -> None:
    settings = load_settings()
    model = _Model()
    assert build_service(settings, object(), _publish, llm=model).llm is model  # type: ignore[arg-type]
    service = build_service(settings, object(), _publish, llm=None)  # type: ignore[arg-type]
    assert service.llm is None
    asyncio.run(service.aclose())  # nothing to close


def _durable_writes(path: Path) -> list[tuple[int, str]]:
    """Calls of a repository's durable write (``triggers.record_trigger(...)``) and
    imports of one (``from delivery.repo.outbox import store_question``)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in DURABLE_WRITES
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in REPOSITORIES
        ):
            found.append((node.lineno, f"calls {node.func.value.id}.{node.func.attr}"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("delivery.repo"):
            found += [(node.lineno, f"imports {a.name}") for a in node.names if a.name in DURABLE_WRITES]
    return found


@pytest.mark.parametrize("package", PRODUCT)
def test_only_the_service_makes_a_request_durable(package: str) -> None:
    wrong = [
        f"{path.relative_to(PROJECT_ROOT).as_posix()}:{line} {what}"
        for path in sorted((PROJECT_ROOT / package).rglob("*.py"))
        if not path.relative_to(PROJECT_ROOT).as_posix().startswith(OWNERS)
        for line, what in _durable_writes(path)
    ]
    assert not wrong, "\n".join(wrong)


def test_the_check_sees_a_durable_write(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from delivery.repo.outbox import store_question\n"
        "async def f(db, r):\n    await triggers.record_trigger(db, r)\n"
        "    await service.record_question(request_id='x')\n"
    )
    assert _durable_writes(module) == [(1, "imports store_question"), (3, "calls triggers.record_trigger")]
