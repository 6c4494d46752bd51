"""Children never outlive their parent: real processes, no broker.

A stop escalates to SIGKILL after the grace and says so; a parent asked to
stop with SIGTERM stops its children as on Ctrl-C (plain and inside
``asyncio.run``); a parent killed with SIGKILL takes its children along
(``PR_SET_PDEATHSIG``); readiness counts only answers from the child itself.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.impostor import impostor_server
from topology.settings import PROJECT_ROOT
from vexnudge.childproc import ChildFailed, ChildProcess, free_port, listener_is, stop_all

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux /proc and prctl")

IGNORES_SIGTERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
)
SLEEPS = "import time; print('up', flush=True); time.sleep(60)"


def python_child(tmp_path: Path, code: str, grace_s: float = 10.0, name: str = "c") -> ChildProcess:
    child = ChildProcess(grace_s)
    child.spawn([], tmp_path / f"{name}.log", command=[sys.executable, "-c", code])
    wait_for(lambda: "up" in child.log_tail(), 10)
    return child


def wait_for(condition, timeout_s: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def gone(pid: int) -> bool:
    """The process has exited (a zombie not yet reaped by its new parent counts)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_and_the_parent_says_so(tmp_path, capsys) -> None:
    child = python_child(tmp_path, IGNORES_SIGTERM, grace_s=0.5)
    started = time.monotonic()
    code = child.stop()
    took = time.monotonic() - started
    assert code == -signal.SIGKILL and child.escalated
    assert 0.5 <= took < 5
    assert "did not stop within 0.5 s of SIGTERM; killed it (SIGKILL)" in capsys.readouterr().err


def test_a_child_that_stops_on_sigterm_is_not_escalated(tmp_path, capsys) -> None:
    child = python_child(tmp_path, SLEEPS, grace_s=5)
    started = time.monotonic()
    assert child.stop() == -signal.SIGTERM
    assert not child.escalated and time.monotonic() - started < 2
    assert "SIGKILL" not in capsys.readouterr().err


def test_stop_all_shares_one_deadline(tmp_path) -> None:
    stubborn = [python_child(tmp_path, IGNORES_SIGTERM, grace_s=0.5, name=f"c{i}") for i in range(3)]
    started = time.monotonic()
    stop_all(stubborn)
    assert all(not c.alive and c.escalated for c in stubborn)
    assert time.monotonic() - started < 0.5 + 1 + 2  # one grace and margin, not three


PARENT = """
import asyncio, sys, time
from pathlib import Path
from vexnudge.childproc import ChildProcess

log = Path(sys.argv[1])
child = ChildProcess(grace_s=5)
child.spawn([], log, command=[sys.executable, "-c", {sleeps!r}])
print(child.pid, flush=True)

async def main():
    try:
        await asyncio.sleep(60)
    finally:
        child.stop()
        print("stopped child", flush=True)

try:
    if sys.argv[2] == "asyncio":
        asyncio.run(main())
    else:
        try:
            time.sleep(60)
        finally:
            child.stop()
            print("stopped child", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


@pytest.fixture
def parent(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A Python process that started one ChildProcess; yields it and the child's pid."""
    script = tmp_path / "parent.py"
    script.write_text(PARENT.format(sleeps=SLEEPS))
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "child.log"), request.param],
        stdout=subprocess.PIPE,
        text=True,
        cwd=PROJECT_ROOT,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
    )
    assert proc.stdout is not None
    child_pid = int(proc.stdout.readline())
    wait_for(lambda: "up" in (tmp_path / "child.log").read_text(), 10)
    try:
        yield proc, child_pid
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        if not gone(child_pid):
            os.kill(child_pid, signal.SIGKILL)


@pytest.mark.parametrize("parent", ["plain", "asyncio"], indirect=True)
def test_sigterm_to_a_parent_stops_its_child_as_ctrl_c_does(parent) -> None:
    proc, child_pid = parent
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=15)
    assert proc.returncode == 0
    assert out.split() == ["stopped", "child", "interrupted"]  # the finally ran, then the interrupt
    assert wait_for(lambda: gone(child_pid), 5)


@linux_only
@pytest.mark.parametrize("parent", ["plain"], indirect=True)
def test_a_parent_killed_hard_takes_its_child_along(parent) -> None:
    proc, child_pid = parent
    proc.kill()  # SIGKILL: no finally, no handler
    proc.wait()
    assert wait_for(lambda: gone(child_pid), 5), "the child outlived its SIGKILLed parent"


@pytest.fixture
def impostor() -> Iterator[int]:
    """Another process's server on a port (here: this test's), answering 200 to anything."""
    with impostor_server() as port:
        yield port


@linux_only
def test_a_listener_is_told_by_its_owner() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert listener_is(os.getpid(), port) is True
        assert listener_is(os.getppid(), port) is False
    assert listener_is(os.getpid(), free_port()) is False


@linux_only
def test_readiness_ignores_another_process_answering_on_the_childs_port(tmp_path, impostor) -> None:
    child = python_child(tmp_path, SLEEPS)  # alive, but never listens
    try:
        with pytest.raises(ChildFailed, match="was not ready after 1 s"):
            child.wait_listening(impostor, "/healthz", timeout_s=1)
    finally:
        child.stop()


def test_a_child_that_fails_to_start_fails_readiness_with_its_own_words(tmp_path) -> None:
    code = textwrap.dedent("""
        import sys
        print("up: starting", flush=True)
        print("vexnudge gateway: cannot serve on 127.0.0.1:1: address already in use", file=sys.stderr)
        sys.exit(1)
    """)
    child = ChildProcess()
    child.spawn([], tmp_path / "c.log", command=[sys.executable, "-c", code])
    with pytest.raises(ChildFailed) as failed:
        child.wait_listening(free_port(), "/healthz", timeout_s=20)
    assert "exited before it was ready (exit code 1)" in str(failed.value)
    assert "cannot serve on 127.0.0.1:1: address already in use" in str(failed.value)
