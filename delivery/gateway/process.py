"""Running a gateway process from tools and tests (start, wait healthy, stop)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from topology.settings import Settings


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class GatewayProcess:
    """A ``vexnudge gateway`` subprocess on the given settings' topics and database.

    The secrets travel in the child's environment only; ``env`` adds or
    overrides variables (e.g. ``SSE_HEARTBEAT_S``).
    """

    settings: Settings
    token_secret: str
    admin_token: str
    port: int = 0
    env: dict[str, str] = field(default_factory=dict)
    loglevel: str = "info"
    log_path: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> GatewayProcess:
        self.port = self.port or free_port()
        self.log_path = self.log_path or Path(tempfile.mkdtemp(prefix="vexnudge-gateway-")) / "gateway.log"
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        s = self.settings
        env = {**os.environ, "TOKEN_SECRET": self.token_secret, "ADMIN_TOKEN": self.admin_token,
               "TOPIC_PREFIX": s.topic_prefix, "KAFKA_BOOTSTRAP_SERVERS": s.kafka_bootstrap_servers,
               "DATABASE_URL": s.database_url.get_secret_value(), "GATEWAY_HOST": "127.0.0.1",
               "GATEWAY_PORT": str(self.port), **self.env}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "topology.cli", "gateway", "-l", self.loglevel], env=env,
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def wait_healthy(self, timeout_s: float = 60.0) -> GatewayProcess:
        """Block until ``/healthz`` answers 200.  :raises RuntimeError: exited or too slow."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                raise RuntimeError(f"the gateway exited early:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/healthz", timeout=2) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the gateway was not healthy after {timeout_s:.0f} s:\n{self.log_tail()}")

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; returns the exit code."""
        if self.process is None:
            return None
        if self.alive:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        if self._log:
            self._log.close()
            self._log = None
        return self.process.returncode

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
