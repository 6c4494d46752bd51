"""Run the fake Ollama server as a subprocess (for worker subprocesses to call)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from topology.settings import PROJECT_ROOT
from vexnudge.childproc import die_with_parent, stop_like_ctrl_c

_READY = "fake-ollama listening on "


@contextmanager
def fake_ollama_subprocess(
    *,
    port: int = 0,
    mode: str = "ok",
    delay_s: float = 0.0,
    fail_first: int = 0,
    reply: str | None = None,
    start_timeout_s: float = 20.0,
) -> Iterator[str]:
    """Start ``python -m tests.fakes.ollama_server``; yield its base URL; stop it
    (also when the tests are stopped by SIGTERM, or killed: see vexnudge.childproc).

    :raises RuntimeError: when the server does not report its address in time.
    """
    cmd = [
        sys.executable,
        "-m",
        "tests.fakes.ollama_server",
        "--port",
        str(port),
        "--mode",
        mode,
        "--delay",
        str(delay_s),
        "--fail-first",
        str(fail_first),
    ]
    if reply is not None:
        cmd += ["--reply", reply]
    stop_like_ctrl_c()  # a SIGTERM to the tests runs the finally below, as Ctrl-C does
    proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True, preexec_fn=die_with_parent())
    try:
        url = _wait_ready(proc, start_timeout_s)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _wait_ready(proc: subprocess.Popen[str], timeout_s: float) -> str:
    import selectors

    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if sel.select(timeout_s):
            line = proc.stdout.readline()
            if line.startswith(_READY):
                return line[len(_READY) :].strip()
    raise RuntimeError(f"the fake Ollama process did not start (exit code {proc.poll()})")
