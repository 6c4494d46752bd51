"""The thin Faust agents around the pure cores (decode → core → encode/emit)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streams.agents.pipeline import Pipeline

#: What a worker process can run: ``stream`` = the stream agent (ingest and
#: analysis) + the live clock (the tables live here); ``feedback`` = the feedback stage and its
#: retries; ``store`` = the event store.
ROLES = ("stream", "feedback", "store")


def register_all(pipeline: Pipeline) -> None:
    """Attach the agents, timers and web pages of the worker's roles to the app."""
    from streams.agents import clock, eventstore, feedback, stream, watchdog, web

    roles = pipeline.settings.worker_roles
    if "stream" in roles:
        stream.register(pipeline)
        clock.register(pipeline)
    if "feedback" in roles:
        feedback.register(pipeline)
    if "store" in roles:
        eventstore.register_event_store(pipeline)
    web.register(pipeline)
    watchdog.register(pipeline)
