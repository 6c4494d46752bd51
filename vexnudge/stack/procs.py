"""Processes the stack starts: records, identity, ports, start and stop.

Invariant: we only ever signal a pid that a record of *ours* names, and only
while that pid is still the same process (same start time in ``/proc`` and the
same identifying argument on its command line).  A recycled pid is never hit.

Linux only: identity and port ownership are read from ``/proc``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from vexnudge.stack.paths import KAFKA_MARKER, stack_root_of_pg_data


@dataclass(frozen=True)
class ProcessRecord:
    """What the stack knows about a service it started (``run/<service>.json``)."""

    service: str
    pid: int
    start_ticks: int
    port: int
    marker: str
    """An argument that must be on the process's command line (identity check)."""
    stack_dir: str
    version: str = ""
    logs: tuple[str, ...] = ()
    extra: dict[str, str] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)

    def save(self, path: Path) -> None:
        """Write the record atomically."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> ProcessRecord | None:
        """The record at ``path``, or ``None`` when absent or unreadable."""
        try:
            data = json.loads(path.read_text())
            data["logs"] = tuple(data.get("logs", ()))
            return cls(**data)
        except (OSError, ValueError, TypeError):
            return None

    def is_running(self) -> bool:
        """Whether the recorded pid is still the very process we started."""
        return process_matches(self.pid, self.start_ticks, self.marker)


def start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":  # a zombie is as good as gone
        return None
    return int(fields[19])


def cmdline(pid: int) -> list[str]:
    """The process's argument vector, or ``[]`` when it is gone or unreadable."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def process_matches(pid: int, ticks: int, marker: str) -> bool:
    """Whether ``pid`` is alive, started at ``ticks`` and carries ``marker``."""
    return start_ticks(pid) == ticks and marker in cmdline(pid)


TIME_WAIT = "06"
LISTEN = "0A"


def listening_pids(port: int) -> list[int]:
    """Pids holding a TCP socket that listens on ``port`` (any address)."""
    return pids_of_inodes({inode for state, inode in local_sockets(port) if state == LISTEN})


def pids_of_inodes(inodes: set[str]) -> list[int]:
    """Pids holding any of these socket inodes (all processes when root, else our own)."""
    inodes = inodes - {"0"}
    if not inodes:
        return []
    targets = {f"socket:[{i}]" for i in inodes}
    found: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fds = os.scandir(f"/proc/{entry.name}/fd")
            with fds:
                if any(_readlink(fd.path) in targets for fd in fds):
                    found.append(int(entry.name))
        except OSError:
            continue
    return sorted(found)


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


def local_sockets(port: int) -> list[tuple[str, str]]:
    """``(state, inode)`` of every TCP socket whose local port is ``port``.

    States are the kernel's hex codes (``0A`` listen, ``06`` time-wait, ``01``
    established); a time-wait socket has inode ``0``.
    """
    found: list[tuple[str, str]] = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 9 and int(cols[1].rsplit(":", 1)[1], 16) == port:
                found.append((cols[3], cols[9]))
    return found


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could bind ``host:port`` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def stack_root_of(pid: int) -> Path | None:
    """The vexnudge stack folder a running process belongs to, if it is one of ours."""
    args = cmdline(pid)
    for arg in args:
        if arg.startswith(KAFKA_MARKER):
            return Path(arg[len(KAFKA_MARKER) :])
    if "-D" in args[:-1]:
        return stack_root_of_pg_data(Path(args[args.index("-D") + 1]))
    return None


def describe(pid: int) -> str:
    """``pid 123 (java -Xmx... )`` for error messages."""
    args = cmdline(pid)
    text = " ".join(args)
    if len(text) > 120:
        text = text[:117] + "..."
    return f"pid {pid} ({text or 'command line not readable'})"


def start_detached(argv: Sequence[str], log_path: Path, cwd: Path) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own session, stdout and stderr appended to ``log_path``.

    The child survives the CLI exiting (new session, no inherited terminal).
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
            close_fds=True,
        )
    _DETACHED[proc.pid] = proc  # held until reaped: a running child is never collected unawaited
    return proc


#: The detached children this process started and has not reaped yet.
_DETACHED: dict[int, subprocess.Popen[bytes]] = {}


def stop(record: ProcessRecord, first: signal.Signals, timeout_s: float) -> str:
    """Stop the recorded process: ``first`` signal, wait, then SIGKILL.

    :returns: ``"gone"`` (was not running), ``"stopped"`` or ``"killed"``.
    """
    if not record.is_running():
        return "gone"
    os.kill(record.pid, first)
    if wait_gone(record, timeout_s):
        return "stopped"
    if record.is_running():
        os.kill(record.pid, signal.SIGKILL)
        wait_gone(record, 10.0)
    return "killed"


def wait_gone(record: ProcessRecord, timeout_s: float) -> bool:
    """Wait until the recorded process has exited; reap it if it is our child."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        _reap(record.pid)
        if not record.is_running():
            return True
        time.sleep(0.1)
    return False


def _reap(pid: int) -> None:
    child = _DETACHED.get(pid)
    if child is not None:
        if child.poll() is not None:  # reaped, and its exit status recorded
            del _DETACHED[pid]
        return
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a text file (empty when it does not exist)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 64 * 1024))
            data = fh.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])
