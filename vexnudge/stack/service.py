"""What every service of the local stack offers, and what ``status`` reports about it."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Literal, Protocol

from vexnudge.stack.paths import StackPaths
from vexnudge.stack.procs import ProcessRecord
from vexnudge.stack.report import Reporter

Status = Literal["running", "starting", "shared", "stopped", "blocked"]


@dataclass(frozen=True)
class ServiceState:
    """One service as ``status`` sees it.

    ``running``: started by this stack and answering; ``starting``: ours, alive, not
    answering yet; ``shared``: a healthy compatible service of the vexnudge stack of
    another folder holds the port (``owner``), and we use it; ``stopped``: nothing on
    the port; ``blocked``: the port is held by something we cannot use (``detail``).
    """

    service: str
    status: Status
    port: int
    pid: int | None = None
    detail: str = ""
    owner: str = ""
    logs: tuple[str, ...] = ()

    @property
    def healthy(self) -> bool:
        return self.status in ("running", "shared")


class Service(Protocol):
    """A process of the local stack (the broker, the PostgreSQL cluster)."""

    name: str
    paths: StackPaths
    port: int
    ports: tuple[int, ...]
    marker: str
    """The argument on its command line that ties the process to this stack folder."""
    stop_signal: signal.Signals
    stop_timeout_s: float

    def healthy(self) -> bool:
        """Whether a real client gets an answer now (a short check)."""
        ...

    def logs(self) -> tuple[str, ...]:
        """Its log files."""
        ...

    def incompatible(self, pid: int) -> str | None:
        """Why this service of another stack folder (process ``pid``) cannot be shared."""
        ...

    def start(self, reporter: Reporter) -> ProcessRecord:
        """Prepare, launch and wait until ready; the caller saves the record."""
        ...

    def wipe(self) -> None:
        """Delete its data (the service is stopped)."""
        ...

    def after_stop(self, record: ProcessRecord, outcome: str) -> None:
        """Housekeeping once the process has gone (``outcome`` from ``procs.stop``)."""
        ...
