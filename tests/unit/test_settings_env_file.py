"""Settings read a repo-root ``.env`` for what the environment leaves unset; the environment wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from topology.settings import PROJECT_ROOT, Settings


def test_dotenv_fills_in_and_the_environment_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = tmp_path / ".env"
    env.write_text("TOPIC_PREFIX=from-file.\nNUDGE_COOLDOWN_S=42\n")
    monkeypatch.delenv("TOPIC_PREFIX", raising=False)
    monkeypatch.setenv("NUDGE_COOLDOWN_S", "7")
    settings = Settings(_env_file=env)  # type: ignore[call-arg]
    assert settings.topic_prefix == "from-file."
    assert settings.nudge_cooldown_s == 7.0


def test_the_default_file_is_the_repository_roots() -> None:
    assert Path(Settings.model_config["env_file"]) == PROJECT_ROOT / ".env"  # type: ignore[arg-type]
