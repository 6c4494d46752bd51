"""Faust's worker as ``vexnudge worker`` runs it."""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import threading
from typing import Any

from faust.worker import Worker

#: The exit code of a worker that gave up on a clean stop (EX_SOFTWARE).
OVERDUE_EXIT = 70


class PipelineWorker(Worker):
    """Faust's :class:`~faust.worker.Worker` without its terminal spinner.

    At ``--loglevel warning`` or ``error`` Faust's worker draws a progress
    spinner that moves on every log record: it adds a DEBUG handler to the root
    logger and lowers the root logger to DEBUG, so every debug record of Faust,
    mode and aiokafka is built and passed to the handlers only to be dropped —
    about 8 % of a stream worker's CPU (docs/performance.md).  Here the root
    logger keeps the level asked for, at every level.

    A stop asked by SIGTERM or SIGINT has ``grace_s`` (``SHUTDOWN_GRACE_S``) to
    finish: the agents hand over their in-flight batch, the consumer commits
    what was acknowledged and the worker leaves its group.  A stop still
    running after that (a wedged library, a hung connection) ends the process
    with exit code 70 and a line on stderr, as a crash would: the next worker
    reads the uncommitted records again, and every stage is idempotent.
    (``grace_s=None``: no deadline of its own.)
    """

    def __init__(self, *services: Any, grace_s: float | None = None, **kwargs: Any) -> None:
        super().__init__(*services, **kwargs)
        self.grace_s = grace_s
        self._deadline: threading.Timer | None = None

    def _schedule_shutdown(self, signum: signal.Signals) -> None:
        if self._deadline is None and self.grace_s is not None:
            self._deadline = threading.Timer(self.grace_s, self._overdue, args=(signum,))
            self._deadline.daemon = True
            self._deadline.start()
        super()._schedule_shutdown(signum)

    def _overdue(self, signum: signal.Signals) -> None:
        """Runs on the deadline's own thread: the event loop may be the one stuck."""
        sys.stderr.write(
            f"vexnudge worker: still stopping {self.grace_s:g} s after {signum.name}; "
            "exiting without a clean stop (uncommitted records are read again "
            "by the next worker)\n"
        )
        sys.stderr.flush()
        os._exit(OVERDUE_EXIT)

    def on_setup_root_logger(self, logger: logging.Logger, level: int) -> None:
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
