"""A ``vexnudge`` sub-command run as a child process by tools and tests.

Started in its own session (so a stop reaches its whole group, and a Ctrl-C
typed at the terminal reaches only the parent, which then stops its children
in order), output to a log file, stopped with SIGTERM then SIGKILL, killed
outright to simulate a crash.  Extra environment variables go to the child only.

How children never outlive their parent:

* **Asked to stop** (Ctrl-C, SIGTERM, SIGHUP): the first :meth:`ChildProcess.spawn`
  in a process makes SIGTERM and SIGHUP do what Ctrl-C does (see
  :func:`stop_like_ctrl_c`), so the ``finally`` blocks that stop the children on
  Ctrl-C (the demo's, replay's, the benchmarks', pytest's fixtures) run on a
  SIGTERM as well.  A stop sends SIGTERM, waits ``grace_s``
  (``SHUTDOWN_GRACE_S``) plus a second for the child's own deadline, then sends
  SIGKILL and says so on stderr; a second Ctrl-C or SIGTERM while waiting kills
  the child at once.
* **Killed hard** (``kill -9``, out of memory): on Linux each child asks the
  kernel for SIGTERM when its parent dies (``prctl(PR_SET_PDEATHSIG)``, set
  between fork and exec by a ``preexec_fn``), so it shuts down cleanly on its
  own.  A process group alone cannot do this: nobody is left to signal it.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import IO

from topology.settings import Settings

#: The stop grace a child gets unless told otherwise (``SHUTDOWN_GRACE_S``'s default).
DEFAULT_GRACE_S = float(Settings.model_fields["shutdown_grace_s"].default)
#: How much longer than ``grace_s`` the parent waits: the child's own deadline
#: (the worker gives up at ``grace_s``) speaks first.
ESCALATION_MARGIN_S = 1.0

_PR_SET_PDEATHSIG = 1


def _libc_prctl() -> Callable[..., int] | None:
    """libc's ``prctl``, resolved once in the parent (the forked child must not
    import or look anything up: other threads may hold locks at fork time)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


_PRCTL = _libc_prctl()


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the child sent SIGTERM when this process dies,
    or None where the kernel cannot do it.

    The kernel ties the signal to the *thread* that forks, so it is only set
    up from the main thread (a worker thread that ends would stop the child).
    A parent that died between fork and ``prctl`` is caught by comparing the
    parent pid: the child then exits before it starts.
    """
    if _PRCTL is None or threading.current_thread() is not threading.main_thread():
        return None
    prctl, parent, sigterm = _PRCTL, os.getpid(), int(signal.SIGTERM)

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, sigterm, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


def _as_ctrl_c(signum: int, frame: FrameType | None) -> None:
    """Handle SIGTERM/SIGHUP with whatever handles SIGINT right now: inside
    ``asyncio.run`` that cancels the main task, elsewhere it raises
    KeyboardInterrupt."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:
        raise KeyboardInterrupt


def stop_like_ctrl_c() -> bool:
    """Make SIGTERM and SIGHUP stop this process the way Ctrl-C does (only
    signals still at their default, and only from the main thread).  Returns
    whether SIGTERM now does."""
    if threading.current_thread() is not threading.main_thread():
        return False
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _as_ctrl_c)
    return signal.getsignal(signal.SIGTERM) is _as_ctrl_c


class ChildProcess:
    """One child process and its log.

    :param grace_s: how long a stop waits after SIGTERM (plus
        :data:`ESCALATION_MARGIN_S`) before it sends SIGKILL.
    """

    name = "child"

    def __init__(self, grace_s: float | None = None) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None
        self.grace_s = DEFAULT_GRACE_S if grace_s is None else grace_s
        self.escalated = False
        """True when the last stop had to send SIGKILL."""
        self._log: IO[bytes] | None = None

    def spawn(
        self,
        args: list[str],
        log_path: Path,
        env: dict[str, str] | None = None,
        *,
        command: list[str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        """Run ``python -m vexnudge.cli ARGS`` (or ``command + ARGS``) with output
        appended to ``log_path``."""
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log_path, "ab")
        prefix = command if command is not None else [sys.executable, "-m", "vexnudge.cli"]
        stop_like_ctrl_c()
        self.process = subprocess.Popen(
            [*prefix, *args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env} if env else None,
            start_new_session=True,
            cwd=cwd,
            preexec_fn=die_with_parent(),
        )

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL: a crash, no shutdown work at all."""
        if self.alive:
            assert self.process is not None
            _signal_group(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        self._close_log()

    def _close_log(self) -> None:
        """Close our handle on the child's log once the child is gone (it holds its own)."""
        if self._log is not None and not self.alive:
            self._log.close()
            self._log = None

    def terminate(self) -> None:
        """SIGTERM to the child's group: the start of a clean stop (does not wait)."""
        if self.alive:
            assert self.process is not None
            _signal_group(self.process.pid, signal.SIGTERM)

    def stop(self, timeout: float | None = None) -> int | None:
        """SIGTERM, then SIGKILL (said on stderr) after ``timeout`` (default
        ``grace_s`` + :data:`ESCALATION_MARGIN_S`); returns the exit code.

        A Ctrl-C or SIGTERM that interrupts the wait kills the child at once.
        """
        if self.process is None:
            return None
        self.terminate()
        self.wait_stopped(time.monotonic() + (self.grace_s + ESCALATION_MARGIN_S if timeout is None else timeout))
        return self.process.returncode

    def wait_stopped(self, deadline: float) -> None:
        """Wait for a child already sent SIGTERM; SIGKILL it at ``deadline``."""
        assert self.process is not None
        self.escalated = False
        try:
            self.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.escalated = True
            print(
                f"vexnudge: the {self.name} (pid {self.process.pid}) did not stop within "
                f"{self.grace_s:g} s of SIGTERM; killed it (SIGKILL)",
                file=sys.stderr,
                flush=True,
            )
            self.kill()
        except BaseException:
            self.kill()
            raise
        finally:
            self._close_log()

    def log_tail(self, lines: int = 40) -> str:
        """The end of the child's log (for error messages)."""
        if not self.log_path or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def wait_listening(self, port: int, path: str = "/healthz", timeout_s: float = 60.0) -> None:
        """Block until ``http://127.0.0.1:PORT PATH`` answers 200 *from this child*.

        An answer counts only while the child is alive and, on Linux, holds the
        socket listening on ``port`` (another process on the port would
        otherwise pass for it).

        :raises ChildFailed: the child exited first (with its last log lines) or
            was not ready within ``timeout_s``.
        """
        deadline = time.monotonic() + timeout_s
        while not self.ready_now(port, path):
            if time.monotonic() > deadline:
                raise self.failed(f"was not ready after {timeout_s:g} s")
            time.sleep(0.2)

    async def listening(self, port: int, path: str = "/healthz", timeout_s: float = 60.0) -> None:
        """:meth:`wait_listening` for a coroutine: a cancellation (Ctrl-C in
        ``asyncio.run``) ends the wait at once."""
        deadline = time.monotonic() + timeout_s
        while not self.ready_now(port, path):
            if time.monotonic() > deadline:
                raise self.failed(f"was not ready after {timeout_s:g} s")
            await asyncio.sleep(0.2)

    def ready_now(self, port: int, path: str) -> bool:
        """One readiness probe.  :raises ChildFailed: the child has exited."""
        if not self.alive:
            raise self.failed("exited before it was ready")
        return listener_is(self.pid, port) is not False and _answers(port, path) and self.alive

    def failed(self, what: str) -> ChildFailed:
        """The error that says the child ``what``, with its exit code and last log lines."""
        code = self.process.poll() if self.process is not None else None
        if code is not None:  # it is gone: nothing writes its log any more
            self._close_log()
        status = f" (exit code {code})" if code is not None else ""
        return ChildFailed(f"the {self.name} {what}{status}:\n{self.log_tail(8)}")


class ChildFailed(RuntimeError):
    """A child process did not start; the message carries its own last words."""


def stop_all(children: list[ChildProcess]) -> None:
    """Stop several children at once: SIGTERM to each, then one shared deadline
    (the longest grace plus the margin) before any is killed."""
    running = [c for c in children if c.process is not None]
    for child in running:
        child.terminate()
    grace = max((c.grace_s for c in running), default=0.0)
    deadline = time.monotonic() + grace + ESCALATION_MARGIN_S
    try:
        for child in running:
            child.wait_stopped(deadline)
    except BaseException:
        for child in running:
            child.kill()
        raise


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass


def _answers(port: int, path: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listener_is(pid: int, port: int) -> bool | None:
    """Whether process ``pid`` holds the TCP socket listening on ``port``
    (Linux ``/proc``); None when this cannot be told here."""
    inodes: set[str] = set()
    readable = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        readable = True
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    if not readable:
        return None
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False if not Path(f"/proc/{pid}").exists() else None
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            return True
    return False
