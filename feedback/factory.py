"""The one way to build the feedback service: the worker and the gateway both call it.

:func:`build_service` reads every tunable from :class:`~topology.settings.Settings`
(the model client's ``OLLAMA_*``/``LLM_*``, the service's ``FEEDBACK_*`` and
``LLM_FALLBACK_TEMPLATE``); a host only brings what differs between hosts:
its PostgreSQL pool, how a record reaches its topic (``publish``), and,
optionally, its metrics and what to do with a request the database refuses.

The service owns the model client it was built with: ``await
service.aclose()`` closes it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

import asyncpg

from feedback.llm import LLMClient, OllamaClient
from feedback.service import FeedbackService, OnRefused, Publish, ServiceMetrics
from topology.settings import Settings

#: ``llm=`` value meaning "the Ollama client ``OLLAMA_HOST``/``OLLAMA_MODEL`` with the ``LLM_*`` limits".
FROM_SETTINGS: Literal["settings"] = "settings"


def build_service(
    settings: Settings,
    pool: asyncpg.Pool,
    publish: Publish,
    *,
    llm: LLMClient | None | Literal["settings"] = FROM_SETTINGS,
    metrics: ServiceMetrics | None = None,
    on_refused: OnRefused | None = None,
    clock: Callable[[], float] = time.time,
) -> FeedbackService:
    """The feedback service of a worker or a gateway.

    :param publish: sends a :class:`~topology.schemas.feedback.FeedbackMessage`
        or :class:`~topology.schemas.feedback.NudgeOutcome` to its topic, keyed
        by the student.
    :param llm: the model client; by default the Ollama client of the
        settings; ``None``: no model (the template answers, or the request
        stays pending when ``LLM_FALLBACK_TEMPLATE`` is off).
    :param metrics: the host's metrics (none by default).
    :param on_refused: told of a request the database refused (the worker
        dead-letters it).
    """
    client = OllamaClient.from_settings(settings) if isinstance(llm, str) else llm
    return FeedbackService(pool, client, settings, publish, metrics=metrics, clock=clock, on_refused=on_refused)
