"""A second, private stack for tests that stop a service: a PostgreSQL cluster
and/or a KRaft broker of their own, on free ports, in a throwaway folder.

Not a fake: the project's own stack code (:mod:`vexnudge.stack.lifecycle`),
only with another ``STACK_DIR`` and other ports, so stopping and restarting a
service here never touches the shared stack that other tests use at the same
time.  Stopping goes through the same code as ``vexnudge stack down``:
PostgreSQL gets SIGINT, its *fast* shutdown (what ``pg_ctl stop -m fast``
sends: open transactions are rolled back and every client is disconnected),
the broker SIGTERM (a controlled shutdown).  Starting again reuses the data.

The folder lives in ``/tmp`` and is traversable by others, so that as root
the cluster (which runs as the ``postgres`` user) stays inside it; the whole
folder is deleted at the end.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import SecretStr

from topology.settings import Settings
from vexnudge.stack import lifecycle
from vexnudge.stack.procs import port_is_free
from vexnudge.stack.report import Reporter

#: Below the ephemeral range (see docs/stack.md), away from the shared stack's ports.
PORT_RANGE = (20000, 32000)


def free_port(span: int = 1, avoid: Iterable[int] = ()) -> int:
    """A port ``p`` such that ``p .. p + span - 1`` can be bound now."""
    taken = set(avoid)
    for _ in range(200):
        port = random.randrange(PORT_RANGE[0], PORT_RANGE[1] - span)
        ports = range(port, port + span)
        if not taken.intersection(ports) and all(port_is_free(p) for p in ports):
            return port
    raise RuntimeError(f"no free port in {PORT_RANGE}")


class PrivateStack:
    """A stack of its own: ``settings`` point every client at it."""

    def __init__(self, base: Settings, root: Path, services: tuple[str, ...]) -> None:
        self.services = services
        self.reporter = Reporter(quiet=True)
        kafka_port = free_port(2)
        pg_port = free_port(avoid=(kafka_port, kafka_port + 1))
        update: dict[str, object] = {"stack_dir": root, "keep_stack": False}
        if "kafka" in services:
            update |= {"kafka_port": kafka_port, "kafka_bootstrap_servers": f"127.0.0.1:{kafka_port}"}
        if "postgres" in services:
            update |= {
                "postgres_port": pg_port,
                "database_url": SecretStr(f"postgresql://vexnudge@127.0.0.1:{pg_port}/vexnudge"),
            }
        self.settings = base.model_copy(update=update)

    def up(self, *only: str) -> None:
        """Start the private services (all, or ``only`` these) and migrate the database."""
        lifecycle.up(self.settings, self.reporter, only=only or self.services)

    def stop(self, *only: str) -> dict[str, str]:
        """Stop them the way ``stack down`` does (PostgreSQL: fast shutdown)."""
        return lifecycle.down(self.settings, self.reporter, only=only or self.services)

    def running(self, service: str) -> bool:
        return lifecycle.status(self.settings, [service])[0].status == "running"

    def database_url(self) -> str:
        return self.settings.database_url.get_secret_value()


@contextmanager
def private_stack(base: Settings, *services: str) -> Iterator[PrivateStack]:
    """Start ``services`` (``"postgres"``, ``"kafka"``) in a fresh folder; stop and delete all at the end."""
    root = Path(tempfile.mkdtemp(prefix="vexnudge-private-"))
    root.chmod(0o711)  # the postgres user must reach its cluster inside
    stack = PrivateStack(base, root, services)
    try:
        stack.up()
        yield stack
    finally:
        try:
            lifecycle.down(stack.settings, stack.reporter, only=services, wipe=True)
        finally:
            shutil.rmtree(root, ignore_errors=True)
