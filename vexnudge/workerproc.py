"""Running worker processes from tools and tests (start, wait ready, kill, stop)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from vexnudge.childproc import ChildProcess


def worker_args(
    app_id: str, topic_prefix: str, clock: str, web_port: int, datadir: Path, extra: list[str]
) -> list[str]:
    """The ``vexnudge worker`` arguments of a worker on its own app id, topics and data directory."""
    return [
        "worker",
        "--app-id",
        app_id,
        "--topic-prefix",
        topic_prefix,
        "--clock",
        clock,
        "--web-port",
        str(web_port),
        "--datadir",
        str(datadir),
        *extra,
    ]


class WorkerProcess(ChildProcess):
    """A ``vexnudge worker`` subprocess on the given app id and topics.

    :param env: variables added to (or overriding) the inherited environment.
    :param extra_args: more ``vexnudge worker`` flags (``--set FIELD=VALUE`` …).
    :param grace_s: the stop grace (``SHUTDOWN_GRACE_S``), also passed to the worker.
    """

    name = "worker"

    def __init__(
        self,
        app_id: str,
        topic_prefix: str,
        clock: str = "live",
        web_port: int = 0,
        extra_args: list[str] | None = None,
        env: dict[str, str] | None = None,
        log_path: Path | None = None,
        datadir: Path | None = None,
        grace_s: float | None = None,
    ) -> None:
        super().__init__(grace_s)
        self.app_id, self.topic_prefix, self.clock, self.web_port = app_id, topic_prefix, clock, web_port
        self.extra_args, self.env = list(extra_args or ()), dict(env or {})
        self.datadir = datadir
        self.log_path = log_path

    def start(self) -> WorkerProcess:
        """Launch the worker."""
        self.datadir = self.datadir or Path(tempfile.mkdtemp(prefix=f"vexnudge-{self.app_id}-"))
        args = worker_args(self.app_id, self.topic_prefix, self.clock, self.web_port, self.datadir, self.extra_args)
        env = {"SHUTDOWN_GRACE_S": f"{self.grace_s:g}", **self.env}
        self.spawn(args, self.log_path or self.datadir / "worker.log", env)
        return self

    def wait_ready(self, timeout_s: float = 60.0) -> WorkerProcess:
        """Block until the worker's ``/healthz`` answers from it (needs a ``web_port``).

        :raises ChildFailed: the worker exited first, or too slow (with its last log lines).
        """
        self.wait_listening(self.web_port, "/healthz", timeout_s)
        return self
