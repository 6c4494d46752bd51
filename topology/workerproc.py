"""Running worker processes from tools and tests (start, kill, stop)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from topology.childproc import ChildProcess


class WorkerProcess(ChildProcess):
    """A ``vexnudge worker`` subprocess on the given app id and topics.

    :param env: variables added to (or overriding) the inherited environment.
    :param extra_args: more ``vexnudge worker`` flags (``--set FIELD=VALUE`` …).
    """

    def __init__(
        self, app_id: str, topic_prefix: str, clock: str = "live", web_port: int = 0,
        extra_args: list[str] | None = None, env: dict[str, str] | None = None,
        log_path: Path | None = None, datadir: Path | None = None,
    ) -> None:
        super().__init__()
        self.app_id, self.topic_prefix, self.clock, self.web_port = app_id, topic_prefix, clock, web_port
        self.extra_args, self.env = list(extra_args or ()), dict(env or {})
        self.datadir = datadir
        self.log_path = log_path

    def start(self) -> WorkerProcess:
        """Launch the worker."""
        self.datadir = self.datadir or Path(tempfile.mkdtemp(prefix=f"vexnudge-{self.app_id}-"))
        args = ["worker", "--app-id", self.app_id, "--topic-prefix", self.topic_prefix,
                "--clock", self.clock, "--web-port", str(self.web_port),
                "--datadir", str(self.datadir), *self.extra_args]
        self.spawn(args, self.log_path or self.datadir / "worker.log", self.env)
        return self
