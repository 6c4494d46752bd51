"""The broker commands without a broker: a clear message and exit code 1, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "command",
    [
        ["replay", "{file}", "--out", "{out}"],
        ["produce", "{file}"],
        ["tail", "vex.triggers", "--until-end"],
        ["worker", "--web-port", "0", "--datadir", "{out}"],
    ],
)
def test_a_broker_command_without_a_broker_says_so_and_exits_1(tmp_path, command: list[str]) -> None:
    lines = tmp_path / "two.ndjson"
    lines.write_text('{"id": 1}\n{"id": 2}\n')
    args = [part.format(file=lines, out=tmp_path / "out") for part in command]
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9", "TOPIC_PREFIX": "t-nobroker."}
    done = subprocess.run(
        [sys.executable, "-m", "vexnudge.cli", *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "127.0.0.1:9" in done.stderr
    assert "vexnudge stack" in done.stderr  # how to start (or check) the local broker
