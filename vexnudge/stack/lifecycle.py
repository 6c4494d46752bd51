"""``up``, ``down``, ``status`` and ``migrate`` of the local stack.

Ownership rules (the same for both services):

- We start a service only when its ports are free, record its pid, and stop only
  a pid we recorded that is still that same process.
- A port held by the service of the vexnudge stack of *another* folder (a second
  clone of the repository, say) is **shared**: when that service answers and is
  compatible (same pinned Kafka version), ``up`` and ``status`` use it and
  ``down`` leaves it alone.  Tests isolate themselves with topic prefixes, so
  sharing a broker is safe; the database gets this checkout's migrations, and a
  migration that differs from the one applied there is refused loudly.
- A port held by anything else is an error that names the process.
- ``up`` and ``down`` of one stack folder take a file lock, so two callers
  (``scripts/test.sh`` and the test fixture, say) never race.
"""

from __future__ import annotations

import asyncio
import fcntl
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from topology.settings import Settings
from vexnudge.stack.errors import NotReady, PortInUse, StackError
from vexnudge.stack.kafka import KafkaService
from vexnudge.stack.paths import StackPaths
from vexnudge.stack.postgres import HOST, PostgresService, database_target
from vexnudge.stack.procs import (
    TIME_WAIT,
    ProcessRecord,
    describe,
    listening_pids,
    local_sockets,
    pids_of_inodes,
    port_is_free,
    stack_root_of,
    start_ticks,
    stop,
)
from vexnudge.stack.report import Reporter
from vexnudge.stack.service import Service, ServiceState, Status

SERVICES = ("kafka", "postgres")


def services(settings: Settings, only: Iterable[str] | None = None) -> list[Service]:
    """The stack's services, optionally only some of them, in start order."""
    chosen = set(SERVICES if only is None else only)
    built: list[Service] = []
    if "kafka" in chosen:
        built.append(KafkaService(settings))
    if "postgres" in chosen:
        built.append(PostgresService(settings))
    return built


@dataclass
class UpResult:
    """What ``up`` did per service: ``started``, ``running`` or ``shared``."""

    outcomes: dict[str, str] = field(default_factory=dict)
    migrations: str = ""

    @property
    def started(self) -> list[str]:
        return [name for name, outcome in self.outcomes.items() if outcome == "started"]


def inspect(service: Service) -> ServiceState:
    """The service's state, from our record and from who holds its ports."""
    root = service.paths
    record = ProcessRecord.load(root.record(service.name))
    if record is not None and record.is_running():
        status: Status = "running" if service.healthy() else "starting"
        return ServiceState(service.name, status, service.port, record.pid, logs=record.logs)
    holders = [(port, pid) for port in service.ports for pid in listening_pids(port)]
    if not holders:
        busy = [p for p in service.ports if not port_is_free(p)]
        if busy:
            return _busy_without_listener(service, busy[0])
        return ServiceState(service.name, "stopped", service.port)
    return _inspect_holder(service, root, *holders[0])


def _busy_without_listener(service: Service, port: int) -> ServiceState:
    """Nobody listens, yet the port cannot be bound: client sockets use it as their local port.

    Ports in the ephemeral range (32768-60999 by default) are handed
    to outgoing connections.  Closing ones (TIME_WAIT) go away within a minute, and
    ``up`` waits for them; a live connection is reported.
    """
    sockets = local_sockets(port)
    if sockets and all(state == TIME_WAIT for state, _ in sockets):
        return ServiceState(
            service.name,
            "stopped",
            service.port,
            detail=(f"port {port} is still held by closing client connections (TIME_WAIT); `up` waits for them"),
        )
    pids = pids_of_inodes({inode for _, inode in sockets})
    who = describe(pids[0]) if pids else "a process this user cannot inspect"
    return ServiceState(
        service.name,
        "blocked",
        service.port,
        pids[0] if pids else None,
        detail=(
            f"port {port} is in use by {who}, as the local port of a connection "
            f"(it lies in the ephemeral range {_ephemeral_range()})"
        ),
    )


def _ephemeral_range() -> str:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    except (OSError, ValueError):
        return "of this machine"
    return f"{low}-{high}"


def _wait_ports_free(service: Service, reporter: Reporter, timeout_s: float = 75.0) -> None:
    """Wait out closing connections on the service's ports before starting it."""
    ticker = None
    deadline = time.monotonic() + timeout_s
    while True:
        busy = [p for p in service.ports if not port_is_free(p)]
        if not busy:
            if ticker:
                ticker.done("free")
            return
        state = inspect(service)
        if state.status == "blocked" or time.monotonic() > deadline:
            raise PortInUse(blocked_message(state))
        if ticker is None:
            ticker = reporter.ticker(
                f"{service.name}: port {busy[0]} is held by closing connections (TIME_WAIT), waiting"
            )
        ticker.tick()
        time.sleep(0.5)


def _inspect_holder(service: Service, root: StackPaths, port: int, pid: int) -> ServiceState:
    owner = stack_root_of(pid)
    if owner is None:
        return ServiceState(
            service.name,
            "blocked",
            service.port,
            pid,
            detail=(f"port {port} is in use by {describe(pid)}, which is not part of a vexnudge stack"),
        )
    if owner == root.root:  # ours, but the record is gone: adopt it
        ProcessRecord(
            service=service.name,
            pid=pid,
            start_ticks=start_ticks(pid) or 0,
            port=service.port,
            marker=service.marker,
            stack_dir=str(root.root),
            logs=service.logs(),
        ).save(root.record(service.name))
        status: Status = "running" if service.healthy() else "starting"
        return ServiceState(service.name, status, service.port, pid, logs=service.logs())
    problem = service.incompatible(pid)
    if problem is None and not service.healthy():
        problem = "it does not answer"
    other = ProcessRecord.load(StackPaths(owner).record(service.name))
    logs = other.logs if other else ()
    if problem:
        return ServiceState(
            service.name,
            "blocked",
            service.port,
            pid,
            owner=str(owner),
            logs=logs,
            detail=f"port {port} is held by the vexnudge stack of {owner}, which cannot be shared: {problem}",
        )
    return ServiceState(service.name, "shared", service.port, pid, owner=str(owner), logs=logs)


def blocked_message(state: ServiceState) -> str:
    """The error for a blocked service, with the ways out."""
    fix = f"Stop it (`vexnudge stack down` in {Path(state.owner).parent})" if state.owner else "Stop that process"
    return (
        f"{state.service}: {state.detail}. {fix}, or run this stack on other ports: "
        "set KAFKA_PORT and POSTGRES_PORT (client addresses follow; see docs/stack.md)."
    )


@contextmanager
def stack_lock(settings: Settings, reporter: Reporter) -> Iterator[None]:
    """Serialise ``up``/``down`` of one stack folder."""
    run_dir = StackPaths(settings.stack_dir.resolve()).run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / "lock", "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            reporter.say("another `vexnudge stack` command is working on this stack; waiting")
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def up(settings: Settings, reporter: Reporter, only: Iterable[str] | None = None, fresh: bool = False) -> UpResult:
    """Start what is not running (idempotent), then apply the migrations.

    :raises StackError: with the reason and the fix.
    """
    result = UpResult()
    with stack_lock(settings, reporter):
        for service in services(settings, only):  # fail before starting anything
            state = inspect(service)
            if state.status == "blocked":
                raise PortInUse(blocked_message(state))
        try:
            for service in services(settings, only):
                result.outcomes[service.name] = _up_one(service, reporter, fresh)
            if "postgres" in result.outcomes:
                result.migrations = _prepare_database(settings, reporter)
        except BaseException:
            # All or nothing: a caller that sees `up` fail has nothing to clean up.
            for service in reversed(services(settings, result.started)):
                reporter.say(f"{service.name}: stopping it again, the stack could not be completed")
                _stop_one(service, reporter)
            raise
    return result


def _up_one(service: Service, reporter: Reporter, fresh: bool) -> str:
    state = inspect(service)
    if state.status == "blocked":
        raise PortInUse(blocked_message(state))
    if state.status == "shared":
        if fresh:
            raise StackError(f"{service.name}: --fresh would wipe the stack of {state.owner}; run it there instead")
        reporter.say(f"{service.name}: using the running stack of {state.owner} (pid {state.pid}, port {state.port})")
        return "shared"
    if state.status in ("running", "starting") and fresh:
        _stop_one(service, reporter)
        state = inspect(service)
    if state.status == "starting":
        state = _wait_healthy(service, reporter)
    if state.status == "running":
        reporter.say(f"{service.name}: already running (pid {state.pid}, port {state.port})")
        return "running"
    if fresh:
        reporter.say(f"{service.name}: wiping its data (--fresh)")
        service.wipe()
    _wait_ports_free(service, reporter)
    record = service.start(reporter)
    reporter.say(f"{service.name}: started (pid {record.pid}, port {record.port})")
    return "started"


def _wait_healthy(service: Service, reporter: Reporter, timeout_s: float = 90.0) -> ServiceState:
    """A service of ours that is alive but not answering yet (being started elsewhere)."""
    ticker = reporter.ticker(f"{service.name}: running but not answering yet, waiting")
    while ticker.elapsed < timeout_s:
        state = inspect(service)
        if state.status != "starting":
            ticker.done(state.status)
            return state
        ticker.tick()
        time.sleep(0.5)
    raise NotReady(
        f"{service.name}: our process is running but has not answered for "
        f"{timeout_s:.0f} s; see its logs, or `vexnudge stack down` and up again"
    )


def _prepare_database(settings: Settings, reporter: Reporter) -> str:
    from delivery.migrate import migrate_url

    url = settings.database_url.get_secret_value()
    host, port, user, dbname = database_target(url)
    if port != settings.postgres_port or host not in (HOST, "localhost"):
        reporter.say(
            f"postgres: DATABASE_URL points at {host}:{port}, not at the local cluster; "
            "not migrating it (`vexnudge stack migrate` does)"
        )
        return ""
    asyncio.run(PostgresService(settings).ensure_database())
    report = asyncio.run(migrate_url(url))
    reporter.say(f"postgres: database {dbname!r} (role {user!r}): migrations {report.summary()}")
    return report.summary()


def down(
    settings: Settings, reporter: Reporter, only: Iterable[str] | None = None, wipe: bool = False
) -> dict[str, str]:
    """Stop the services this stack started; never anything else.

    :param wipe: also delete their data (never that of a shared service).
    :returns: per service ``stopped``, ``killed``, ``not running`` or ``shared``.
    """
    outcomes: dict[str, str] = {}
    with stack_lock(settings, reporter):
        for service in reversed(services(settings, only)):
            outcomes[service.name] = _stop_one(service, reporter)
            if wipe and outcomes[service.name] != "shared":
                service.wipe()
                reporter.say(f"{service.name}: data deleted")
    return outcomes


def _stop_one(service: Service, reporter: Reporter) -> str:
    root = service.paths
    record = ProcessRecord.load(root.record(service.name))
    if record is None or not record.is_running():
        root.record(service.name).unlink(missing_ok=True)
        state = inspect(service)
        if state.status == "shared":
            reporter.say(f"{service.name}: not stopping it, it belongs to the stack of {state.owner}")
            return "shared"
        if state.status in ("running", "starting"):  # adopted just now
            return _stop_one(service, reporter)
        reporter.say(f"{service.name}: not running")
        return "not running"
    ticker = reporter.ticker(f"{service.name}: stopping pid {record.pid}")
    outcome = stop(record, service.stop_signal, service.stop_timeout_s)
    ticker.done(outcome)
    service.after_stop(record, outcome)
    root.record(service.name).unlink(missing_ok=True)
    return outcome


def status(settings: Settings, only: Iterable[str] | None = None) -> list[ServiceState]:
    """Every selected service's state."""
    return [inspect(service) for service in services(settings, only)]


def format_status(states: Iterable[ServiceState]) -> str:
    """The human table of ``stack status``."""
    lines = []
    for s in states:
        pid = f"pid {s.pid}" if s.pid else "-"
        head = f"{s.service:<9}{s.status:<9}{pid:<11}127.0.0.1:{s.port}"
        if s.owner:
            head += f"  (stack of {s.owner})"
        lines.append(head)
        if s.detail:
            lines.append(f"         {s.detail}")
        for log in s.logs:
            lines.append(f"         log: {log}")
    return "\n".join(lines)


def migrate(settings: Settings, reporter: Reporter) -> str:
    """Apply the migrations to ``settings.database_url`` (any server)."""
    from delivery.migrate import migrate_url

    report = asyncio.run(migrate_url(settings.database_url.get_secret_value()))
    reporter.say(f"migrations: {report.summary()}")
    return report.summary()


async def wait_answering(settings: Settings, timeout_s: float = 30.0) -> None:
    """Wait until a real Kafka client sees a broker at KAFKA_BOOTSTRAP_SERVERS and
    DATABASE_URL answers ``select 1``.

    :raises NotReady: when either does not within ``timeout_s``.
    """
    import asyncpg

    from vexnudge.stack.kafka import broker_answers

    async def database_answers() -> bool:
        try:
            conn = await asyncpg.connect(settings.database_url.get_secret_value(), timeout=3.0)
        except (TimeoutError, OSError, asyncpg.PostgresError):
            return False
        try:
            return bool(await conn.fetchval("select 1") == 1)
        finally:
            await conn.close()

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    kafka_ok = db_ok = False
    while loop.time() < deadline:
        kafka_ok = kafka_ok or await broker_answers(settings.kafka_bootstrap_servers)
        db_ok = db_ok or await database_answers()
        if kafka_ok and db_ok:
            return
        await asyncio.sleep(0.5)
    missing = [
        name
        for name, ok in (
            ("Kafka at " + settings.kafka_bootstrap_servers, kafka_ok),
            ("PostgreSQL (DATABASE_URL)", db_ok),
        )
        if not ok
    ]
    raise NotReady(f"no answer from {' and '.join(missing)} within {timeout_s:.0f} s")
