"""The thin Faust agents around the pure cores (decode → core → encode/emit)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from topology.app import Pipeline


def register_all(pipeline: Pipeline) -> None:
    """Attach every agent, timer and web page to the pipeline's app."""
    from streams.agents import analysis, clock, feedback, ingest, watchdog, web

    ingest.register(pipeline)
    analysis.register(pipeline)
    feedback.register(pipeline)
    clock.register(pipeline)
    web.register(pipeline)
    watchdog.register(pipeline)
