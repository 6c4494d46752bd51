"""Faust's worker as ``vexnudge worker`` runs it."""

from __future__ import annotations

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
