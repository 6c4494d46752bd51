"""Running a gateway process from tools and tests (start, wait ready, stop)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from topology.settings import Settings
from vexnudge.childproc import ChildProcess, free_port

__all__ = ["GatewayProcess", "free_port"]


class GatewayProcess(ChildProcess):
    """A ``vexnudge gateway`` subprocess on the given settings' topics and database.

    The secrets travel in the child's environment only; ``env`` adds or
    overrides variables (e.g. ``SSE_HEARTBEAT_S``).  The stop grace is the
    settings' ``SHUTDOWN_GRACE_S`` unless ``grace_s`` says otherwise.
    """

    name = "gateway"

    def __init__(
        self,
        settings: Settings,
        token_secret: str,
        admin_token: str,
        port: int = 0,
        env: dict[str, str] | None = None,
        loglevel: str = "info",
        log_path: Path | None = None,
        grace_s: float | None = None,
    ) -> None:
        super().__init__(settings.shutdown_grace_s if grace_s is None else grace_s)
        self.settings, self.token_secret, self.admin_token = settings, token_secret, admin_token
        self.port, self.env, self.loglevel, self.log_path = port, dict(env or {}), loglevel, log_path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> GatewayProcess:
        self.port = self.port or free_port()
        log_path = self.log_path or Path(tempfile.mkdtemp(prefix="vexnudge-gateway-")) / "gateway.log"
        s = self.settings
        env = {
            "TOKEN_SECRET": self.token_secret,
            "ADMIN_TOKEN": self.admin_token,
            "TOPIC_PREFIX": s.topic_prefix,
            "KAFKA_BOOTSTRAP_SERVERS": s.kafka_bootstrap_servers,
            "DATABASE_URL": s.database_url.get_secret_value(),
            "GATEWAY_HOST": "127.0.0.1",
            "GATEWAY_PORT": str(self.port),
            "SHUTDOWN_GRACE_S": f"{self.grace_s:g}",
            **self.env,
        }
        self.spawn(["gateway", "-l", self.loglevel], log_path, env)
        return self

    def wait_healthy(self, timeout_s: float = 60.0) -> GatewayProcess:
        """Block until ``/healthz`` answers 200 from this gateway (not from
        another process on its port).

        :raises ChildFailed: the gateway exited first (its own error line is in
            the message) or was not healthy within ``timeout_s``.
        """
        self.wait_listening(self.port, "/healthz", timeout_s)
        return self
