"""Running worker processes from tools and tests (start, wait, stop)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO


@dataclass
class WorkerProcess:
    """A ``vexnudge worker`` subprocess and its log file."""

    app_id: str
    topic_prefix: str
    clock: str = "live"
    web_port: int = 0
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    """Variables added to (or overriding) the inherited environment."""
    log_path: Path | None = None
    datadir: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = None

    def start(self) -> WorkerProcess:
        """Launch the worker (inherits the environment, overrides by flags)."""
        self.datadir = self.datadir or Path(tempfile.mkdtemp(prefix=f"vexnudge-{self.app_id}-"))
        self.log_path = self.log_path or self.datadir / "worker.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        cmd = [sys.executable, "-m", "topology.cli", "worker", "--app-id", self.app_id,
               "--topic-prefix", self.topic_prefix, "--clock", self.clock,
               "--web-port", str(self.web_port), "--datadir", str(self.datadir), *self.extra_args]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT,
                                        env={**os.environ, **self.env} if self.env else None,
                                        start_new_session=True)
        return self

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
        return self.process.returncode

    def log_tail(self, lines: int = 40) -> str:
        """The end of the worker's log (for error messages)."""
        if not self.log_path or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
