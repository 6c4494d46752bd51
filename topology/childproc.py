"""A ``vexnudge`` sub-command run as a child process by tools and tests.

Started in its own session (so a stop reaches its whole group), output to a
log file, stopped with SIGTERM then SIGKILL, killed outright to simulate a
crash.  Extra environment variables go to the child only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO


class ChildProcess:
    """One child process and its log."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None
        self._log: IO[bytes] | None = None

    def spawn(self, args: list[str], log_path: Path, env: dict[str, str] | None = None, *,
              command: list[str] | None = None, cwd: Path | None = None) -> None:
        """Run ``python -m topology.cli ARGS`` (or ``command + ARGS``) with output
        appended to ``log_path``."""
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in stop()
        prefix = command if command is not None else [sys.executable, "-m", "topology.cli"]
        self.process = subprocess.Popen(
            [*prefix, *args], stdout=self._log,
            stderr=subprocess.STDOUT, env={**os.environ, **env} if env else None,
            start_new_session=True, cwd=cwd)

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: a crash, no shutdown work at all."""
        if self.alive:
            assert self.process is not None
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; returns the exit code."""
        if self.process is None:
            return None
        if self.alive:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        if self._log:
            self._log.close()
            self._log = None
        return self.process.returncode

    def log_tail(self, lines: int = 40) -> str:
        """The end of the child's log (for error messages)."""
        if not self.log_path or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
