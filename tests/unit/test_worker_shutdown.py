"""``vexnudge worker`` under SIGTERM: a stop still running after SHUTDOWN_GRACE_S
ends the process on its own (exit 70, a line on stderr) instead of hanging.

The clean path (in-flight batch committed, exit 0 in about a second) is
tested against the real broker in tests/integration/test_supervision.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

from topology.seam.worker import OVERDUE_EXIT
from topology.settings import PROJECT_ROOT

STUCK_STOP = textwrap.dedent("""
    import asyncio, signal, sys, time
    from streams.agents.pipeline import build_pipeline
    from topology.seam.worker import PipelineWorker
    from topology.settings import Settings

    app = build_pipeline(Settings(app_id="vx-stop", worker_datadir=sys.argv[1], worker_web_port=0)).app
    worker = PipelineWorker(app, loglevel="warning", redirect_stdouts=False, grace_s=float(sys.argv[2]))

    async def stuck_stop() -> None:  # a stop that never finishes (a wedged library)
        await asyncio.sleep(60)

    worker._stop_on_signal = lambda signum: stuck_stop()
    worker._schedule_shutdown(signal.SIGTERM)  # what SIGTERM does once the worker runs
    worker.loop.run_until_complete(asyncio.sleep(30))
    print("not stopped", flush=True)
""")


def run_stuck(tmp_path, grace_s: float) -> tuple[subprocess.CompletedProcess[str], float]:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", STUCK_STOP, str(tmp_path), str(grace_s)],
        cwd=PROJECT_ROOT,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done, time.monotonic() - started


def test_a_stop_stuck_past_the_grace_exits_70_and_says_so(tmp_path) -> None:
    done, took = run_stuck(tmp_path, 0.5)
    assert done.returncode == OVERDUE_EXIT, done.stderr
    assert "vexnudge worker: still stopping 0.5 s after SIGTERM; exiting without a clean stop" in done.stderr
    assert "not stopped" not in done.stdout
    assert took < 20  # the interpreter start-up and the imports, then half a second
