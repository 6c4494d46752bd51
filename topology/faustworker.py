"""Faust's worker as ``vexnudge worker`` runs it."""

from __future__ import annotations

import gc
import logging

from faust.worker import Worker


class PipelineWorker(Worker):
    """Faust's :class:`~faust.worker.Worker` without its terminal spinner.

    At ``--loglevel warning`` or ``error`` Faust's worker draws a progress
    spinner that moves on every log record: it adds a DEBUG handler to the root
    logger and lowers the root logger to DEBUG, so every debug record of Faust,
    mode and aiokafka is built and passed to the handlers only to be dropped —
    about 8 % of a stream worker's CPU (docs/performance.md).  Here the root
    logger keeps the level asked for, at every level.
    """

    def on_setup_root_logger(self, logger: logging.Logger, level: int) -> None:  # noqa: ARG002
        self.spinner = None


def tune_collector(gen0: int) -> tuple[int, int, int]:
    """Run the cyclic garbage collector's youngest generation every ``gen0``
    allocations (``WORKER_GC_GEN0``); the older generations keep their
    thresholds.  Returns the thresholds now in force.

    A worker allocates a few hundred short-lived objects per event (decoded
    JSON, the event, outputs, records) and almost none of them are in
    reference cycles, so with Python's default of 700 the collector walks the
    young objects several times per batch for nothing: 2.6 % of a stream
    worker's CPU (docs/performance.md, "The garbage collector").
    """
    _young, middle, old = gc.get_threshold()
    gc.set_threshold(gen0, middle, old)
    return gc.get_threshold()
