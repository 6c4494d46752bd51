"""The local PostgreSQL cluster: a throwaway ``initdb`` cluster in the stack folder.

It listens on ``127.0.0.1:settings.postgres_port`` only, keeps its Unix socket in
the stack folder (no system service, nothing in ``/var/run``), trusts loopback
connections (a development cluster), and trades durability for speed
(``fsync=off``: a machine crash may lose it; ``stack up --fresh`` rebuilds it).

initdb refuses to run as root, so as root the server runs as the ``postgres``
user (or a ``vexnudge`` system user created for it) and owns its folders.
When no server binaries are found they are installed with apt-get as root.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import pwd
import re
import shlex
import shutil
import signal
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from topology.settings import Settings
from vexnudge.stack.errors import NotReady, StackError, ToolMissing
from vexnudge.stack.paths import PG_OWNER_FILE, StackPaths, stack_root_of_pg_data
from vexnudge.stack.procs import ProcessRecord, cmdline, start_ticks, tail
from vexnudge.stack.report import Reporter

HOST = "127.0.0.1"
#: Where a cluster goes when the server user cannot reach the stack folder.
OUTSIDE_DIR = Path("/var/tmp")
SUPERUSER = "postgres"
READY_TIMEOUT_S = 60
_SOCKET_PATH_MAX = 100  # sun_path is 108 bytes with the ".s.PGSQL.<port>" name
_SERVER_CONF = """
# --- vexnudge local stack (appended by vexnudge/stack/postgres.py) ---
listen_addresses = '127.0.0.1'
fsync = off
synchronous_commit = off
full_page_writes = off
cluster_name = 'vexnudge'
log_line_prefix = '%m [%p] %q%u@%d '
"""


def find_pg_bin(search: tuple[str, ...] = ("/usr/lib/postgresql",)) -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``, newest version first."""
    on_path = shutil.which("pg_ctl")
    if on_path:
        folder = Path(on_path).resolve().parent
        if all((folder / tool).exists() for tool in ("initdb", "postgres")):
            return folder
    candidates: list[tuple[int, Path]] = []
    for base in search:
        for folder in Path(base).glob("*/bin"):
            if all((folder / t).exists() for t in ("initdb", "pg_ctl", "postgres")):
                version = re.match(r"\d+", folder.parent.name)
                candidates.append((int(version.group()) if version else 0, folder))
    return max(candidates)[1] if candidates else None


def database_target(database_url: str) -> tuple[str, int, str, str]:
    """``(host, port, user, dbname)`` of a ``postgresql://`` URL."""
    parts = urlsplit(database_url)
    return (
        parts.hostname or HOST,
        parts.port or 5432,
        unquote(parts.username or SUPERUSER),
        unquote(parts.path.lstrip("/")) or unquote(parts.username or SUPERUSER),
    )


class PostgresService:
    """The PostgreSQL cluster of the stack in ``settings.stack_dir``."""

    name = "postgres"
    stop_signal = signal.SIGINT  # PostgreSQL's "fast" shutdown; SIGTERM would wait for clients
    stop_timeout_s = 30.0

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.paths = StackPaths(settings.stack_dir.resolve())
        self.port = settings.postgres_port
        self.ports: tuple[int, ...] = (settings.postgres_port,)
        self.layout = PgLayout.current(self.paths)
        self.marker = str(self.layout.data)

    # --- Service -----------------------------------------------------------------
    def healthy(self) -> bool:
        return asyncio.run(self._answers(timeout_s=3.0))

    def logs(self) -> tuple[str, ...]:
        return (str(self.layout.log),)

    def incompatible(self, pid: int) -> str | None:
        return None  # any cluster of ours with the same role and migrations will do

    def wipe(self) -> None:
        shutil.rmtree(self.layout.data, ignore_errors=True)
        if self.layout.outside:
            shutil.rmtree(self.layout.base, ignore_errors=True)
            self._use(PgLayout.inside(self.paths))

    def after_stop(self, record: ProcessRecord, outcome: str) -> None:
        if outcome == "killed":
            (self.layout.data / "postmaster.pid").unlink(missing_ok=True)

    def start(self, reporter: Reporter) -> ProcessRecord:
        bindir = self._binaries(reporter)
        user = self._server_user()
        if user is not None:
            collect_orphans(reporter)
        self._prepare_dirs(user, reporter)
        if not (self.layout.data / "PG_VERSION").is_file():
            self._initdb(bindir, user, reporter)
        self._clear_stale_pidfile()
        self._pg_ctl_start(bindir, user, reporter)
        pid = int((self.layout.data / "postmaster.pid").read_text().split()[0])
        record = ProcessRecord(
            service=self.name,
            pid=pid,
            start_ticks=start_ticks(pid) or 0,
            port=self.port,
            marker=self.marker,
            stack_dir=str(self.paths.root),
            version=(self.layout.data / "PG_VERSION").read_text().strip(),
            logs=self.logs(),
        )
        record.save(self.paths.record(self.name))
        if not asyncio.run(self._answers(timeout_s=10.0)):
            raise NotReady(
                f"PostgreSQL started but does not answer on {HOST}:{self.port}.\n{tail(self.layout.log, 30)}"
            )
        return record

    async def ensure_database(self) -> tuple[str, str]:
        """Create the role and database that ``settings.database_url`` names (idempotent)."""
        import asyncpg

        _, _, user, dbname = database_target(self.settings.database_url.get_secret_value())
        conn = await asyncpg.connect(host=HOST, port=self.port, user=SUPERUSER, database="postgres", timeout=10)
        try:
            if not await conn.fetchval("select 1 from pg_roles where rolname = $1", user):
                await conn.execute(f"create role {_ident(user)} login createdb")
            if not await conn.fetchval("select 1 from pg_database where datname = $1", dbname):
                await conn.execute(f"create database {_ident(dbname)} owner {_ident(user)}")
        finally:
            await conn.close()
        return user, dbname

    # --- steps -------------------------------------------------------------------
    async def _answers(self, timeout_s: float) -> bool:
        import asyncpg

        try:
            conn = await asyncpg.connect(
                host=HOST, port=self.port, user=SUPERUSER, database="postgres", timeout=timeout_s
            )
        except (TimeoutError, OSError, asyncpg.PostgresError):
            return False
        try:
            return bool(await conn.fetchval("select 1", timeout=timeout_s) == 1)
        finally:
            await conn.close()

    def _binaries(self, reporter: Reporter) -> Path:
        found = find_pg_bin()
        if found:
            return found
        if os.geteuid() != 0:
            raise ToolMissing(
                "PostgreSQL server binaries (initdb, pg_ctl, postgres) were not found on PATH or "
                "under /usr/lib/postgresql/*/bin. Install them, e.g. "
                "`sudo apt-get install postgresql` (Debian/Ubuntu), "
                "then run `vexnudge stack up` again."
            )
        reporter.say("postgres: server binaries not found, installing Debian's postgresql with apt-get")
        for argv in (
            ["apt-get", "update", "-q"],
            [
                "env",
                "DEBIAN_FRONTEND=noninteractive",
                "apt-get",
                "install",
                "-y",
                "-q",
                "--no-install-recommends",
                "postgresql",
            ],
        ):
            out = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                stdin=subprocess.DEVNULL,
                check=False,
                timeout=900,
            )
            if out.returncode != 0:
                text = "\n".join((out.stdout + out.stderr).splitlines()[-15:])
                raise ToolMissing(
                    f"`{' '.join(argv)}` failed (exit code {out.returncode}); install "
                    f"PostgreSQL's server package (postgresql) by hand.\n{text}"
                )
        found = find_pg_bin()
        if not found:
            raise ToolMissing("apt-get installed postgresql but no initdb/pg_ctl was found afterwards")
        return found

    def _server_user(self) -> tuple[int, int] | None:
        """``(uid, gid)`` to run the server as, or ``None`` to run as ourselves (not root)."""
        if os.geteuid() != 0:
            return None
        for name in ("postgres", "vexnudge"):
            try:
                entry = pwd.getpwnam(name)
                return entry.pw_uid, entry.pw_gid
            except KeyError:
                continue
        out = subprocess.run(
            [
                "useradd",
                "--system",
                "--user-group",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                "vexnudge",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode != 0:
            raise StackError(
                f"initdb refuses to run as root and creating a `vexnudge` system user failed: {out.stderr.strip()}"
            )
        entry = pwd.getpwnam("vexnudge")
        return entry.pw_uid, entry.pw_gid

    def _use(self, layout: PgLayout) -> None:
        self.layout, self.marker = layout, str(layout.data)

    def _prepare_dirs(self, user: tuple[int, int] | None, reporter: Reporter) -> None:
        """Create the cluster's folders, owned by the server user when we are root.

        When that user cannot reach the stack folder (a private parent, such as a
        ``mktemp -d`` folder or ``/root``), the cluster moves to /var/tmp, with a
        pointer back to its stack folder, instead of changing permissions outside ours.
        """
        if user is not None and not self.layout.outside and not self._has_cluster():
            self._make_dirs(user)
            if not self._reachable(user):
                moved = PgLayout.outside_of(self.paths)
                shutil.rmtree(self.layout.base, ignore_errors=True)
                self._use(moved)
                reporter.say(
                    f"postgres: the server user cannot reach {self.paths.root} (a parent folder "
                    f"is private), so the cluster lives in {moved.base}"
                )
        self._make_dirs(user)
        if self.layout.outside:
            (self.layout.base / PG_OWNER_FILE).write_text(f"{self.paths.root}\n")
        if user is not None and not self._reachable(user):
            name = pwd.getpwuid(user[0]).pw_name
            raise StackError(
                f"PostgreSQL must run as the unprivileged user `{name}` (initdb refuses root), "
                f"and that user cannot reach {self.layout.data}: a parent folder is not "
                "searchable by others. `vexnudge stack up --fresh --only postgres` recreates "
                "the cluster where it can, or `chmod o+x` the parent folders."
            )

    def _has_cluster(self) -> bool:
        return (self.layout.data / "PG_VERSION").is_file()

    def _make_dirs(self, user: tuple[int, int] | None) -> None:
        lay = self.layout
        for folder in (lay.base, lay.data, lay.socket_dir, lay.log_dir):
            folder.mkdir(parents=True, exist_ok=True)
        if lay.outside:
            top = os.lstat(lay.base.parent)
            if not stat.S_ISDIR(top.st_mode) or top.st_uid != os.geteuid():
                raise StackError(f"{lay.base.parent} is not a folder of ours; remove it and retry")
        lay.data.chmod(0o700)
        if user is not None:
            for folder in (lay.data, lay.socket_dir, lay.log_dir):
                os.chown(folder, *user)

    def _reachable(self, user: tuple[int, int]) -> bool:
        probe = subprocess.run(
            ["test", "-w", str(self.layout.data)],
            user=user[0],
            group=user[1],
            extra_groups=[],
            check=False,
        )
        return probe.returncode == 0

    def _run_as(
        self, user: tuple[int, int] | None, argv: list[str], timeout_s: float
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` as ``(uid, gid)`` (root only), or as ourselves when ``user`` is None."""
        return subprocess.run(
            argv,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            cwd=self.layout.base,
            timeout=timeout_s,
            check=False,
            start_new_session=True,
            user=user[0] if user else None,
            group=user[1] if user else None,
            extra_groups=[] if user else None,
        )

    def _initdb(self, bindir: Path, user: tuple[int, int] | None, reporter: Reporter) -> None:
        ticker = reporter.ticker("postgres: creating the cluster (initdb)")
        out = self._run_as(
            user,
            [
                str(bindir / "initdb"),
                "-D",
                str(self.layout.data),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ],
            300,
        )
        if out.returncode != 0:
            shutil.rmtree(self.layout.data, ignore_errors=True)
            raise StackError(f"initdb failed (exit code {out.returncode}):\n{out.stdout}{out.stderr}")
        with open(self.layout.data / "postgresql.conf", "a") as conf:
            conf.write(_SERVER_CONF)
        ticker.done("done")

    def _socket_dir(self) -> str:
        path = str(self.layout.socket_dir)
        return path if len(path) + len(f"/.s.PGSQL.{self.port}") < _SOCKET_PATH_MAX else ""

    def _clear_stale_pidfile(self) -> None:
        """A pid file left by a killed server whose pid now belongs to someone else."""
        pidfile = self.layout.data / "postmaster.pid"
        try:
            pid = int(pidfile.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return
        if self.marker not in cmdline(pid):
            pidfile.unlink(missing_ok=True)

    def _pg_ctl_start(self, bindir: Path, user: tuple[int, int] | None, reporter: Reporter) -> None:
        ticker = reporter.ticker(f"postgres: starting on {HOST}:{self.port}")
        options = f"-p {self.port} -k {shlex.quote(self._socket_dir())}"
        out = self._run_as(
            user,
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(self.layout.data),
                "-l",
                str(self.layout.log),
                "-o",
                options,
                "-w",
                "-t",
                str(READY_TIMEOUT_S),
                "start",
            ],
            READY_TIMEOUT_S + 30,
        )
        if out.returncode != 0:
            raise NotReady(
                f"pg_ctl could not start PostgreSQL (exit code {out.returncode}).\n"
                f"{out.stdout}{out.stderr}\n--- last lines of {self.layout.log}:\n"
                f"{tail(self.layout.log, 30)}"
            )
        ticker.done("ready")


@dataclass(frozen=True)
class PgLayout:
    """Where a stack's cluster lives: normally ``<stack>/postgres``, logs in ``<stack>/logs``.

    ``outside``: kept in ``/var/tmp/vexnudge-pg-<hash of the stack folder>`` because the
    server user cannot reach the stack folder; a ``stack_root`` file there points back.
    """

    base: Path
    log_dir: Path
    outside: bool = False

    @property
    def data(self) -> Path:
        return self.base / "data"

    @property
    def socket_dir(self) -> Path:
        return self.base / "run"

    @property
    def log(self) -> Path:
        return self.log_dir / "postgres.log"

    @classmethod
    def inside(cls, paths: StackPaths) -> PgLayout:
        return cls(paths.pg_dir, paths.pg_logs)

    @classmethod
    def outside_of(cls, paths: StackPaths) -> PgLayout:
        digest = hashlib.sha256(str(paths.root).encode()).hexdigest()[:12]
        base = OUTSIDE_DIR / f"vexnudge-pg-{digest}" / "postgres"
        return cls(base, base / "log", outside=True)

    @classmethod
    def current(cls, paths: StackPaths) -> PgLayout:
        """The outside layout when a cluster of this stack is there, else the normal one."""
        moved = cls.outside_of(paths)
        if stack_root_of_pg_data(moved.data) == paths.root and moved.data.is_dir():
            return moved
        return cls.inside(paths)


def collect_orphans(reporter: Reporter) -> None:
    """Delete clusters kept in /var/tmp for stack folders that no longer exist (and stopped)."""
    for base in OUTSIDE_DIR.glob("vexnudge-pg-*/postgres"):
        owner = stack_root_of_pg_data(base / "data")
        if owner is None or owner.exists() or base.parent.stat().st_uid != os.geteuid():
            continue
        try:
            pid = int((base / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pid = 0
        if pid and str(base / "data") in cmdline(pid):
            continue
        shutil.rmtree(base.parent, ignore_errors=True)
        reporter.say(f"postgres: deleted {base.parent}, the cluster of the removed {owner}")


def _ident(name: str) -> str:
    """A quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'
