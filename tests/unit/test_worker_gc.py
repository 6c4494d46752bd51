"""``WORKER_GC_GEN0``: the worker's garbage-collector threshold."""

from __future__ import annotations

import gc

import pytest
from pydantic import ValidationError

from topology.seam.worker import tune_collector
from topology.settings import Settings


@pytest.fixture
def thresholds():
    """The collector's thresholds, restored after the test."""
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


def test_the_young_generation_threshold_is_set_and_the_older_ones_kept(thresholds) -> None:
    gc.set_threshold(700, 13, 17)
    assert tune_collector(25_000) == (25_000, 13, 17)
    assert gc.get_threshold() == (25_000, 13, 17)


def test_the_default_setting_collects_less_often_than_python(thresholds) -> None:
    settings = Settings()
    assert tune_collector(settings.worker_gc_gen0)[0] == settings.worker_gc_gen0 > 700


@pytest.mark.parametrize("value", ["0", "99", "10000001"])
def test_a_threshold_that_would_switch_the_collector_off_or_never_run_it_is_refused(value: str) -> None:
    with pytest.raises(ValidationError, match="worker_gc_gen0"):
        Settings(worker_gc_gen0=value)
