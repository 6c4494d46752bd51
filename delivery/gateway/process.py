"""Running a gateway process from tools and tests (start, wait healthy, stop)."""

from __future__ import annotations

import socket
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from topology.childproc import ChildProcess
from topology.settings import Settings


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class GatewayProcess(ChildProcess):
    """A ``vexnudge gateway`` subprocess on the given settings' topics and database.

    The secrets travel in the child's environment only; ``env`` adds or
    overrides variables (e.g. ``SSE_HEARTBEAT_S``).
    """

    def __init__(
        self, settings: Settings, token_secret: str, admin_token: str, port: int = 0,
        env: dict[str, str] | None = None, loglevel: str = "info", log_path: Path | None = None,
    ) -> None:
        super().__init__()
        self.settings, self.token_secret, self.admin_token = settings, token_secret, admin_token
        self.port, self.env, self.loglevel, self.log_path = port, dict(env or {}), loglevel, log_path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> GatewayProcess:
        self.port = self.port or free_port()
        log_path = self.log_path or Path(tempfile.mkdtemp(prefix="vexnudge-gateway-")) / "gateway.log"
        s = self.settings
        env = {"TOKEN_SECRET": self.token_secret, "ADMIN_TOKEN": self.admin_token,
               "TOPIC_PREFIX": s.topic_prefix, "KAFKA_BOOTSTRAP_SERVERS": s.kafka_bootstrap_servers,
               "DATABASE_URL": s.database_url.get_secret_value(), "GATEWAY_HOST": "127.0.0.1",
               "GATEWAY_PORT": str(self.port), **self.env}
        self.spawn(["gateway", "-l", self.loglevel], log_path, env)
        return self

    def wait_healthy(self, timeout_s: float = 60.0) -> GatewayProcess:
        """Block until ``/healthz`` answers 200.  :raises RuntimeError: exited or too slow."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.alive:
                raise RuntimeError(f"the gateway exited early:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/healthz", timeout=2) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the gateway was not healthy after {timeout_s:.0f} s:\n{self.log_tail()}")

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; returns the exit code."""
        return super().stop(timeout)
