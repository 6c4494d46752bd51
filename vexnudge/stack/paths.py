"""Where the local stack keeps its files.

One stack lives in one folder (``settings.stack_dir``, ``.vexnudge/`` of the
checkout by default)::

    run/kafka.json, run/postgres.json   what we started: pid, start time, port, version
    kafka/server.properties, kafka/log4j2.properties, kafka/data/
    postgres/data/, postgres/run/       the cluster and its Unix socket (see postgres.py
                                        for when it has to live in /var/tmp instead)
    logs/kafka/server.log, logs/kafka/stdout.log, logs/postgres/postgres.log

The broker jars are shared by every checkout in ``settings.cache_dir``::

    kafka-<version>/libs/*.jar, kafka-<version>/COMPLETE.json (written last),
    kafka-<version>/kafka.jsa (class-data archive), kafka-<version>.lock
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: Marker on the broker's command line that names the stack folder it belongs to.
KAFKA_MARKER = "-Dvexnudge.stack_dir="


@dataclass(frozen=True)
class StackPaths:
    """The files of the stack rooted at ``root``."""

    root: Path

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    def record(self, service: str) -> Path:
        """The JSON record of a service this stack started."""
        return self.run_dir / f"{service}.json"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    # --- Kafka -------------------------------------------------------------------
    @property
    def kafka_dir(self) -> Path:
        return self.root / "kafka"

    @property
    def kafka_data(self) -> Path:
        return self.kafka_dir / "data"

    @property
    def kafka_config(self) -> Path:
        return self.kafka_dir / "server.properties"

    @property
    def kafka_log4j(self) -> Path:
        return self.kafka_dir / "log4j2.properties"

    @property
    def kafka_logs(self) -> Path:
        return self.logs_dir / "kafka"

    @property
    def kafka_server_log(self) -> Path:
        return self.kafka_logs / "server.log"

    @property
    def kafka_stdout(self) -> Path:
        return self.kafka_logs / "stdout.log"

    # --- PostgreSQL --------------------------------------------------------------
    @property
    def pg_dir(self) -> Path:
        return self.root / "postgres"

    @property
    def pg_data(self) -> Path:
        return self.pg_dir / "data"

    @property
    def pg_socket_dir(self) -> Path:
        return self.pg_dir / "run"

    @property
    def pg_logs(self) -> Path:
        return self.logs_dir / "postgres"

    @property
    def pg_log(self) -> Path:
        return self.pg_logs / "postgres.log"


#: Beside a cluster kept outside its stack folder: the stack folder it belongs to.
PG_OWNER_FILE = "stack_root"


def stack_root_of_pg_data(data_dir: Path) -> Path | None:
    """The stack folder whose cluster lives in ``data_dir``, if it is one of ours."""
    try:
        return Path((data_dir.parent / PG_OWNER_FILE).read_text().strip())
    except OSError:
        pass
    if data_dir.name == "data" and data_dir.parent.name == "postgres":
        return data_dir.parent.parent
    return None


@dataclass(frozen=True)
class JarCache:
    """The cached broker jars of one Kafka version."""

    cache_dir: Path
    version: str

    @property
    def root(self) -> Path:
        return self.cache_dir / f"kafka-{self.version}"

    @property
    def libs(self) -> Path:
        return self.root / "libs"

    @property
    def marker(self) -> Path:
        return self.root / "COMPLETE.json"

    @property
    def archive(self) -> Path:
        return self.root / "kafka.jsa"

    @property
    def archive_dump(self) -> Path:
        """Where a broker started without an archive dumps one when it exits."""
        return self.root / "kafka.jsa.dump"

    @property
    def lock(self) -> Path:
        return self.cache_dir / f"kafka-{self.version}.lock"

    @property
    def build_dir(self) -> Path:
        return self.root / "build"
