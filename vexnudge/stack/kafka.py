"""The local Apache Kafka broker: one KRaft node on 127.0.0.1 from Maven jars.

Start = fetch the jars once (:mod:`vexnudge.stack.jars`), render
``server.properties`` and ``log4j2.properties`` into the stack folder, format
storage once (static quorum, so without ``--standalone``), launch ``kafka.Kafka``
detached, and wait until a real client sees the broker (aiokafka bootstrap with
a non-empty broker list), 90 s at most.

Warm starts use a class-data archive (AppCDS): a broker started without one
dumps it when it exits cleanly, and later starts map it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

from topology.settings import KAFKA_VERSION, Settings
from vexnudge.stack.errors import NotReady, StackError
from vexnudge.stack.jars import Java, ensure_jars, find_java
from vexnudge.stack.paths import KAFKA_MARKER, JarCache, StackPaths
from vexnudge.stack.procs import ProcessRecord, cmdline, start_detached, start_ticks, stop, tail
from vexnudge.stack.report import Reporter

READY_TIMEOUT_S = 90.0
_KAFKA_JAR_RE = re.compile(r"kafka_2\.13-([0-9][^/:]*)\.jar")
HOST = "127.0.0.1"
#: The JVM options of ``kafka-server-start.sh``, with the dev heap.
JVM_OPTS = (
    "-Xms512m",
    "-Xmx512m",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
    "-Xshare:auto",
    "-Xlog:cds=off",
    "-Xlog:cds+dynamic=off",
)


def render_server_properties(kafka_port: int, partitions: int, log_dirs: Path) -> str:
    """``server.properties`` for a broker on ``127.0.0.1:kafka_port`` (controller on +1)."""
    template = resources.files("vexnudge.stack").joinpath("server.properties").read_text()
    return (
        template.replace("@KAFKA_PORT@", str(kafka_port))
        .replace("@CONTROLLER_PORT@", str(kafka_port + 1))
        .replace("@PARTITIONS@", str(partitions))
        .replace("@LOG_DIRS@", str(log_dirs))
    )


def parse_properties(text: str) -> dict[str, str]:
    """The ``key=value`` pairs of a simple Java .properties text (no continuations)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def new_cluster_id() -> str:
    """A KRaft cluster id the way Kafka's ``Uuid.randomUuid().toString()`` makes one.

    22 characters of URL-safe base64 without padding; never the zero or metadata-topic
    id, and never starting with ``-`` (the storage tool would read it as a flag).
    """
    while True:
        raw = secrets.token_bytes(16)
        text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        if raw not in (bytes(16), bytes(15) + b"\x01") and not text.startswith("-"):
            return text


async def broker_answers(bootstrap: str, timeout_s: float = 3.0) -> bool:
    """Whether an aiokafka client bootstraps from ``bootstrap`` and sees a broker."""
    from aiokafka.client import AIOKafkaClient
    from aiokafka.errors import KafkaError

    client = AIOKafkaClient(bootstrap_servers=bootstrap, request_timeout_ms=int(timeout_s * 1000))
    try:
        with _quiet_aiokafka():
            await asyncio.wait_for(client.bootstrap(), timeout_s)
        return bool(client.cluster.brokers())
    except (TimeoutError, KafkaError, OSError):
        return False
    finally:
        await client.close()


@contextmanager
def _quiet_aiokafka() -> Iterator[None]:
    """aiokafka logs every refused bootstrap at ERROR; a readiness probe expects those."""
    logger = logging.getLogger("aiokafka")
    before = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(before)


def port_accepts(port: int, host: str = HOST, timeout_s: float = 0.5) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


class KafkaService:
    """The broker of the stack in ``settings.stack_dir``."""

    name = "kafka"
    stop_signal = signal.SIGTERM
    stop_timeout_s = 45.0

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.paths = StackPaths(settings.stack_dir.resolve())
        self.cache = JarCache(settings.cache_dir, KAFKA_VERSION)
        self.port = settings.kafka_port
        self.ports: tuple[int, ...] = (settings.kafka_port, settings.kafka_port + 1)
        self.marker = f"{KAFKA_MARKER}{self.paths.root}"
        self.bootstrap = f"{HOST}:{self.port}"

    def healthy(self) -> bool:
        return port_accepts(self.port) and asyncio.run(broker_answers(self.bootstrap))

    def logs(self) -> tuple[str, ...]:
        return (str(self.paths.kafka_server_log), str(self.paths.kafka_stdout))

    def incompatible(self, pid: int) -> str | None:
        versions = {m.group(1) for arg in cmdline(pid) for m in _KAFKA_JAR_RE.finditer(arg)}
        if versions != {KAFKA_VERSION}:
            found = ", ".join(sorted(versions)) or "an unknown version"
            return f"it runs Kafka {found}, this checkout pins {KAFKA_VERSION}"
        return None

    def wipe(self) -> None:
        shutil.rmtree(self.paths.kafka_data, ignore_errors=True)

    def start(self, reporter: Reporter) -> ProcessRecord:
        java = find_java()
        jars = ensure_jars(self.cache, java, reporter)
        classpath = ":".join(str(j) for j in jars)
        self._write_config()
        self._format(java, classpath, reporter)
        cds_opts, extra = self._cds_options(java)
        argv = [
            java.path,
            *JVM_OPTS,
            *cds_opts,
            *self._log_opts(),
            self.marker,
            "-cp",
            classpath,
            "kafka.Kafka",
            str(self.paths.kafka_config),
        ]
        self.paths.kafka_stdout.unlink(missing_ok=True)
        proc = start_detached(argv, self.paths.kafka_stdout, cwd=self.paths.kafka_dir)
        record = ProcessRecord(
            service=self.name,
            pid=proc.pid,
            start_ticks=start_ticks(proc.pid) or 0,
            port=self.port,
            marker=self.marker,
            stack_dir=str(self.paths.root),
            version=KAFKA_VERSION,
            logs=self.logs(),
            extra=extra,
        )
        record.save(self.paths.record(self.name))
        self._wait_ready(proc, record, reporter)
        return record

    def after_stop(self, record: ProcessRecord, outcome: str) -> None:
        dump = record.extra.get("cds_dump")
        if not dump:
            return
        dump_path = Path(dump)
        if outcome == "stopped" and dump_path.is_file() and dump_path.stat().st_size > 0:
            dump_path.replace(self.cache.archive)
            self._archive_meta().write_text(json.dumps({"java": record.extra.get("java", "")}) + "\n")
        else:
            dump_path.unlink(missing_ok=True)

    # --- steps -------------------------------------------------------------------
    def _write_config(self) -> None:
        for folder in (self.paths.kafka_dir, self.paths.kafka_data, self.paths.kafka_logs):
            folder.mkdir(parents=True, exist_ok=True)
        self.paths.kafka_config.write_text(
            render_server_properties(self.port, self.settings.topic_partitions, self.paths.kafka_data)
        )
        log4j = resources.files("vexnudge.stack").joinpath("log4j2.properties").read_text()
        self.paths.kafka_log4j.write_text(log4j)

    def _log_opts(self) -> list[str]:
        return [
            f"-Dlog4j2.configurationFile=file:{self.paths.kafka_log4j}",
            f"-Dkafka.logs.dir={self.paths.kafka_logs}",
        ]

    def _format(self, java: Java, classpath: str, reporter: Reporter) -> None:
        if (self.paths.kafka_data / "meta.properties").is_file():
            return
        ticker = reporter.ticker("kafka: formatting storage")
        argv = [
            java.path,
            "-Xmx256m",
            "-XX:TieredStopAtLevel=1",
            "-Xshare:auto",
            *self._log_opts(),
            "-cp",
            classpath,
            "kafka.tools.StorageTool",
            "format",
            "-t",
            new_cluster_id(),
            "-c",
            str(self.paths.kafka_config),
            "--ignore-formatted",
        ]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)
        if out.returncode != 0:
            text = "\n".join((out.stdout + out.stderr).splitlines()[-25:])
            raise StackError(f"formatting Kafka storage failed (exit code {out.returncode}):\n{text}")
        ticker.done("done")

    def _archive_meta(self) -> Path:
        return self.cache.root / "kafka.jsa.json"

    def _cds_options(self, java: Java) -> tuple[list[str], dict[str, str]]:
        if not self.settings.kafka_cds:
            return [], {}
        try:
            built_with = json.loads(self._archive_meta().read_text()).get("java")
        except (OSError, ValueError):
            built_with = None
        if self.cache.archive.is_file() and built_with == java.version:
            return [f"-XX:SharedArchiveFile={self.cache.archive}"], {}
        dump = self.cache.root / f"kafka.jsa.dump-{secrets.token_hex(4)}"
        return [f"-XX:ArchiveClassesAtExit={dump}"], {"cds_dump": str(dump), "java": java.version}

    def _wait_ready(self, proc: subprocess.Popen[bytes], record: ProcessRecord, reporter: Reporter) -> None:
        ticker = reporter.ticker(f"kafka: waiting for the broker on {self.bootstrap}")
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            code = proc.poll()
            if code is not None:
                raise NotReady(f"the Kafka broker exited with code {code} while starting.\n{self._log_tail()}")
            if port_accepts(self.port) and asyncio.run(broker_answers(self.bootstrap)):
                ticker.done("ready")
                return
            if time.monotonic() > deadline:
                self.after_stop(record, stop(record, signal.SIGKILL, 10.0))
                self.paths.record(self.name).unlink(missing_ok=True)
                raise NotReady(
                    f"the Kafka broker was not ready after {READY_TIMEOUT_S:.0f} s (stopped it).\n{self._log_tail()}"
                )
            ticker.tick()
            time.sleep(0.25)

    def _log_tail(self) -> str:
        parts = []
        for path in (self.paths.kafka_server_log, self.paths.kafka_stdout):
            text = tail(path, 30)
            if text:
                parts.append(f"--- last lines of {path}:\n{text}")
        return "\n".join(parts) or f"(no log output; see {self.paths.kafka_logs})"
