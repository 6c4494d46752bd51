"""Processes that supervise processes, with real processes on the real broker.

- SIGTERM to ``vexnudge demo`` stops its worker and gateway (none left alive,
  the gateway's port free again), as Ctrl-C does;
- a port already taken fails the demo with the gateway's own error line and a
  non-zero exit, and no page URL is printed;
- a worker sent SIGTERM mid-replay exits 0 within SHUTDOWN_GRACE_S having
  committed what it published: a restart republishes nothing and the triggers
  are exactly the golden ones;
- a gateway sent SIGTERM ends its open SSE streams (the clients see the end)
  and exits 0 within SHUTDOWN_GRACE_S.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from delivery.gateway import tokens
from streams.local import read_lines
from tests.datafiles import SAMPLE_CLASSROOM
from tests.fakes.impostor import impostor_server
from tests.integration.pipeline import isolated, on_own_topics, start_worker
from tests.integration.test_resilience import finish, golden_ids, raw_committed
from topology.kafka_admin import end_offsets, read_to_end
from topology.settings import PROJECT_ROOT, Settings
from vexnudge.childproc import free_port
from vexnudge.gatewayproc import GatewayProcess
from vexnudge.producer import produce_lines
from vexnudge.replay import ReplayResult
from vexnudge.workerproc import WorkerProcess

pytestmark = pytest.mark.integration

GRACE_S = 10.0  # SHUTDOWN_GRACE_S's default


def children_of(pid: int) -> set[int]:
    """The live processes whose parent is ``pid``."""
    out: set[int] = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid and stat[0] not in ("Z", "X"):
                out.add(int(entry.name))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def port_is_free(port: int) -> bool:
    """Nothing listens on ``port``: a new server can take it (as a restarted gateway
    would, with SO_REUSEADDR: the closed connections' TIME_WAIT do not count)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


class Demo:
    """``vexnudge demo`` as a subprocess, its stdout read line by line, its children watched."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "vexnudge.cli", "demo", *args],
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        )
        self.lines: list[str] = []
        self.children: set[int] = set()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def _watch(self) -> None:
        while self.proc.poll() is None:
            self.children |= children_of(self.proc.pid)
            time.sleep(0.1)

    def wait_line(self, text: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.proc.poll() is None:
            for line in self.lines:
                if text in line:
                    return line
            time.sleep(0.1)
        raise AssertionError(
            f"no {text!r} from the demo; stdout:\n{''.join(self.lines)}"
            f"stderr:\n{self.stderr() if self.proc.poll() is not None else ''}"
        )

    def stderr(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.read()

    def finish(self, timeout_s: float) -> tuple[int, str]:
        code = self.proc.wait(timeout_s)
        self._reader.join(5)
        return code, self.stderr()

    def kill(self) -> None:
        """Cleanup: the demo and whatever it left, then its pipes."""
        for pid in (self.proc.pid, *self.children):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(10)
        self._reader.join(5)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def demo_processes() -> Iterator[list[Demo]]:
    started: list[Demo] = []
    yield started
    for demo in started:
        demo.kill()


def test_sigterm_to_the_demo_stops_its_worker_and_gateway_and_frees_the_port(stack, demo_processes) -> None:
    port = free_port()
    demo = Demo("--port", str(port), "--students", "1")
    demo_processes.append(demo)
    demo.wait_line("demo: teacher board", 180)
    demo.wait_line("demo: replaying", 30)
    children = set(demo.children)
    assert len(children) == 2, f"expected a worker and a gateway, saw {children}"
    assert not port_is_free(port)

    started = time.monotonic()
    demo.proc.send_signal(signal.SIGTERM)
    code, err = demo.finish(GRACE_S + 60)  # the children's stop, then the demo's topics are deleted
    took = time.monotonic() - started

    assert code == 0, err
    assert "demo: stopped" in err
    assert "SIGKILL" not in err, "a child needed SIGKILL"
    assert not [pid for pid in children if alive(pid)], "a child outlived the demo"
    assert port_is_free(port)
    print(f"demo stopped by SIGTERM in {took:.1f} s")


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port held by another server that answers 200 on /healthz, like a gateway would."""
    with impostor_server() as port:
        yield port


def test_a_taken_port_fails_the_demo_with_the_gateways_reason_and_no_url(stack, demo_processes, taken_port) -> None:
    demo = Demo("--port", str(taken_port), "--exit", "--max")
    demo_processes.append(demo)
    code, err = demo.finish(240)
    out = "".join(demo.lines)

    assert code == 1, f"stdout:\n{out}\nstderr:\n{err}"
    assert "the gateway exited before it was ready (exit code 1)" in err
    assert f"vexnudge gateway: port {taken_port} on 127.0.0.1 is already taken by another process" in err
    assert "address already in use" in err  # the gateway's own line
    assert f":{taken_port}/" not in out and "teacher board" not in out, (
        "a page URL was printed for a port the demo does not serve"
    )
    print(err)
    assert demo.children and not [pid for pid in demo.children if alive(pid)]


def test_a_worker_stopped_by_sigterm_mid_replay_commits_what_it_published(stack, unique_prefix) -> None:
    settings = isolated(stack, unique_prefix)
    lines = read_lines(SAMPLE_CLASSROOM.read_bytes())

    async def published(topic: str) -> int:
        return sum((await end_offsets(settings, settings.topic(topic))).values())

    async def scenario() -> tuple[ReplayResult, float, int, int, int | None, bool, list[bytes]]:
        first = WorkerProcess(
            settings.app_id,
            settings.topic_prefix,
            clock="replay",
            web_port=free_port(),
            extra_args=["--commit-interval", "0.2", "--session-timeout", "10"],
        )
        first.start().wait_ready(120)  # consuming before the lines arrive, so the stop lands mid-replay
        producing = asyncio.ensure_future(produce_lines(settings, lines, rate=150))
        deadline = time.monotonic() + 120
        while await committed(settings) < len(lines) // 3:
            assert first.alive and time.monotonic() < deadline, first.log_tail()
            await asyncio.sleep(0.1)
        started = time.monotonic()
        code = first.stop()
        took = time.monotonic() - started
        at_stop = (await committed(settings), await published("vex.events") + await published("vex.deadletter"))
        second = start_worker(settings)
        try:
            await producing
            result = await finish(settings, lines)
        finally:
            second.stop()
        events = [r.value or b"" async for r in read_to_end(settings, [settings.topic("vex.events")])]
        return result, took, *at_stop, code, first.escalated, events

    result, took, committed_at_stop, published_at_stop, code, escalated, events = on_own_topics(settings, scenario)
    print(f"worker stopped by SIGTERM in {took:.2f} s, {committed_at_stop} raw lines committed")
    assert code == 0 and not escalated
    assert took < GRACE_S
    assert 0 < committed_at_stop < len(lines), "the stop did not land mid-replay"
    # Every line the stopped worker published an outcome for was committed ...
    assert published_at_stop <= committed_at_stop
    # ... so the restarted worker published none of them again, and lost none.
    duplicated = {value: n for value, n in Counter(events).items() if n > 1}
    assert not duplicated, f"{len(duplicated)} events published twice"
    # Exactly the golden triggers, each published once (a kill -9 may publish some twice).
    fired = Counter(t.trigger_id for t in result.observed.triggers)
    assert fired == Counter(golden_ids()), (
        f"missing {len(golden_ids() - set(fired))}, "
        f"extra {len(set(fired) - golden_ids())}, "
        f"twice {sum(1 for n in fired.values() if n > 1)}"
    )


async def committed(settings: Settings) -> int:
    """The raw lines committed by the test's group (0 while the group is unknown)."""
    try:
        return await raw_committed(settings)
    except Exception:  # noqa: BLE001 - the coordinator may not know the group yet
        return 0


def test_sigterm_to_the_gateway_ends_its_streams_and_exits_0(stack, unique_prefix, tmp_path) -> None:
    settings = isolated(stack, unique_prefix)
    secret, admin = secrets.token_hex(32), secrets.token_hex(32)
    gateway = GatewayProcess(settings, secret, admin, log_path=tmp_path / "gateway.log").start()

    async def scenario() -> tuple[float, float, int | None, list[bytes]]:
        gateway.wait_healthy(120)
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http:
            streams = []
            for student in ("ada", "bob"):
                token = tokens.issue(secret.encode(), student, ttl_s=3600, now=time.time())
                response = await http.get(
                    f"{gateway.base_url}/v1/students/{student}/stream", headers={"Authorization": f"Bearer {token}"}
                )
                assert response.status == 200, await response.text()
                await asyncio.wait_for(response.content.readuntil(b": connected"), 10)  # the opening comment
                streams.append(response)
            async with http.get(f"{gateway.base_url}/healthz") as health:
                assert (await health.json())["open_streams"] == 2
            started = time.monotonic()
            gateway.terminate()
            tails = await asyncio.gather(*(asyncio.wait_for(r.content.read(), GRACE_S) for r in streams))
            ended = time.monotonic() - started
        code = await asyncio.to_thread(gateway.process.wait, GRACE_S)  # type: ignore[union-attr]
        return ended, time.monotonic() - started, code, tails

    try:
        ended, exited, code, tails = asyncio.run(scenario())
    finally:
        gateway.stop()
    print(f"gateway: streams ended {ended:.2f} s, process exited {exited:.2f} s after SIGTERM")
    assert code == 0, gateway.log_tail()
    assert exited < GRACE_S and not gateway.escalated
    assert all(isinstance(tail, bytes) for tail in tails)  # read to the end: the stream was ended
    assert "closing 2 open stream(s)" in gateway.log_tail(60)
