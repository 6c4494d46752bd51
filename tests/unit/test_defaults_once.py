"""Every default lives once, in ``Settings``: the pure values built from the settings
take their own keyword defaults from it, so the two never drift apart."""

from __future__ import annotations

import inspect

import pytest

from feedback.llm import OllamaClient
from feedback.nudge import NudgeConfig
from streams.config import EngineConfig
from streams.scoring import DEFAULT_MAX_CPU_MS, TreeEditScorer
from streams.screen import Limits
from topology.settings import Settings, default

#: The settings with nothing but their defaults (no environment, no .env file).
DEFAULTS = Settings.model_construct()


def test_the_pure_configs_default_to_the_settings_defaults() -> None:
    assert NudgeConfig() == NudgeConfig.from_settings(DEFAULTS)
    assert EngineConfig() == EngineConfig.from_settings(DEFAULTS)
    assert Limits() == Limits.from_settings(DEFAULTS)


def test_the_nudge_cooldown_is_the_settings_one() -> None:
    assert NudgeConfig().cooldown_s == DEFAULTS.nudge_cooldown_s == 180.0


def test_the_clients_default_to_the_settings_defaults() -> None:
    model = inspect.signature(OllamaClient.__init__).parameters
    assert (model["timeout_s"].default, model["max_retries"].default, model["concurrency"].default) == (
        DEFAULTS.llm_timeout_s,
        DEFAULTS.llm_max_retries,
        DEFAULTS.llm_concurrency,
    )
    scorer = inspect.signature(TreeEditScorer.__init__).parameters
    assert (scorer["max_blocks"].default, scorer["cache_size"].default, DEFAULT_MAX_CPU_MS) == (
        DEFAULTS.tree_edit_max_blocks,
        DEFAULTS.tree_edit_cache_size,
        DEFAULTS.tree_edit_max_cpu_ms,
    )


def test_default_reads_the_field_not_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUDGE_COOLDOWN_S", "5")
    assert default("nudge_cooldown_s") == 180.0
    assert default("iterative_thresholds") is not default("iterative_thresholds")  # a fresh copy
