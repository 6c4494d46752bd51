"""``vexnudge worker --loglevel``: the root logger keeps the level asked for."""

from __future__ import annotations

import logging

import pytest

from streams.agents.pipeline import build_pipeline
from topology.seam.worker import PipelineWorker
from topology.settings import Settings

pytestmark = pytest.mark.usefixtures("close_stray_loops")


@pytest.fixture
def root_logger():
    """The root logger's level and handlers, restored after the test."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield root
    for handler in root.handlers:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


@pytest.mark.parametrize(
    ("loglevel", "expected"),
    [
        ("debug", logging.DEBUG),
        ("info", logging.INFO),
        ("warning", logging.WARNING),
        ("error", logging.ERROR),
    ],
)
def test_the_root_logger_keeps_the_requested_level(tmp_path, root_logger, loglevel: str, expected: int) -> None:
    app = build_pipeline(Settings(app_id="vx-log", worker_datadir=tmp_path, worker_web_port=0)).app
    worker = PipelineWorker(app, loglevel=loglevel, redirect_stdouts=False)
    worker._setup_logging()  # what the worker does when it starts
    assert root_logger.level == expected
    # Faust's spinner would add a DEBUG handler and lower the root to DEBUG:
    # every aiokafka debug record would then be built only to be dropped.
    assert logging.getLogger("aiokafka.consumer.fetcher").isEnabledFor(logging.DEBUG) is (expected == logging.DEBUG)
    assert worker.spinner is None
    assert not [h for h in root_logger.handlers if type(h).__name__ == "SpinnerHandler"]
