"""The broker's jars: Java and Maven checks, and a fetch from Maven Central done once.

``ensure_jars`` copies ``org.apache.kafka:kafka_2.13`` and its runtime
dependencies, plus the log4j2 backend that its POM leaves out, into the cache
folder with a throwaway POM (``pom.xml`` beside this module) and
``maven-dependency-plugin:copy-dependencies``.  The jars land in a staging
folder that is renamed into place, and ``COMPLETE.json`` is written last: a
cache without it (an interrupted fetch) is fetched again.  A file lock makes
two checkouts fetching at once wait for each other instead of racing.
"""

from __future__ import annotations

import fcntl
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from xml.sax.saxutils import escape

from topology.settings import KAFKA_VERSION, LOG4J2_VERSION
from vexnudge.cli.progress import Progress
from vexnudge.stack.errors import FetchFailed, ToolMissing
from vexnudge.stack.paths import JarCache
from vexnudge.stack.procs import tail
from vexnudge.stack.report import Reporter

MIN_JAVA = 17
_SLF4J1_BINDING = "log4j-slf4j-impl"
_SLF4J2_BINDING = "log4j-slf4j2-impl"


@dataclass(frozen=True)
class Java:
    """The ``java`` launcher found on PATH and its version line."""

    path: str
    major: int
    version: str


def parse_java_version(output: str) -> tuple[int, str]:
    """``(major, full)`` from ``java -version`` output (``1.8.0_x`` is 8).

    :raises ValueError: when no version string is found.
    """
    match = re.search(r'version "([^"]+)"', output)
    if not match:
        raise ValueError(f"no version in {output!r}")
    full = match.group(1)
    parts = full.split(".")
    major = int(parts[1]) if parts[0] == "1" and len(parts) > 1 else int(re.sub(r"\D.*", "", parts[0]))
    return major, full


def find_java() -> Java:
    """The Java runtime that runs the broker.

    :raises ToolMissing: when ``java`` is not on PATH or is older than 17.
    """
    path = shutil.which("java")
    if path is None:
        raise ToolMissing(
            "Java 17 or newer is needed to run the Kafka broker, and `java` is not on PATH. "
            "Install a JDK or JRE 17+ (Debian: apt-get install openjdk-17-jre-headless)."
        )
    out = subprocess.run([path, "-version"], capture_output=True, text=True, timeout=60, check=False)
    try:
        major, full = parse_java_version(out.stderr + out.stdout)
    except ValueError as exc:
        raise ToolMissing(f"could not tell the version of {path}: {exc}") from None
    if major < MIN_JAVA:
        raise ToolMissing(
            f"Kafka {KAFKA_VERSION} needs Java {MIN_JAVA} or newer; {path} is Java {full}. "
            "Install a newer JDK and put it first on PATH."
        )
    return Java(path, major, full)


def slf4j_binding_for(slf4j_api_version: str) -> str:
    """The log4j2 binding that matches an slf4j-api version (1.7.x or 2.x)."""
    return _SLF4J2_BINDING if int(slf4j_api_version.split(".")[0]) >= 2 else _SLF4J1_BINDING


def render_pom(output_dir: Path, binding: str) -> str:
    """The throwaway POM, filled in for the pinned versions."""
    template = resources.files("vexnudge.stack").joinpath("pom.xml").read_text()
    return (
        template.replace("@KAFKA_VERSION@", KAFKA_VERSION)
        .replace("@LOG4J2_VERSION@", LOG4J2_VERSION)
        .replace("@SLF4J_BINDING@", binding)
        .replace("@OUTPUT_DIR@", escape(str(output_dir)))
    )


def cached_jars(cache: JarCache) -> list[Path] | None:
    """The cached jars when the cache is complete for this version, else ``None``."""
    try:
        marker = json.loads(cache.marker.read_text())
    except (OSError, ValueError):
        return None
    if marker.get("kafka_version") != KAFKA_VERSION or marker.get("log4j2_version") != LOG4J2_VERSION:
        return None
    jars = [cache.libs / name for name in sorted(marker.get("jars", {}))]
    for jar in jars:
        try:
            if jar.stat().st_size != marker["jars"][jar.name]:
                return None
        except OSError:
            return None
    return jars or None


def ensure_jars(cache: JarCache, java: Java, reporter: Reporter) -> list[Path]:
    """The broker's classpath, fetching it with Maven first if it is not cached.

    :raises ToolMissing: when Maven is missing.
    :raises FetchFailed: when Maven fails (the message carries its output's tail).
    """
    jars = cached_jars(cache)
    if jars:
        return jars
    cache.cache_dir.mkdir(parents=True, exist_ok=True)
    with _locked(cache.lock):
        jars = cached_jars(cache)  # another process may have fetched meanwhile
        if jars:
            return jars
        return _fetch(cache, java, reporter)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _fetch(cache: JarCache, java: Java, reporter: Reporter) -> list[Path]:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ToolMissing(
            "Maven (`mvn`) is needed once to fetch the Kafka broker jars and is not on PATH. "
            "Install it (Debian: apt-get install maven)."
        )
    staging = cache.root / "libs.partial"
    binding = _SLF4J1_BINDING
    for _ in range(2):
        shutil.rmtree(staging, ignore_errors=True)
        _run_maven(mvn, cache, staging, binding, reporter)
        wanted = slf4j_binding_for(_slf4j_api_version(staging))
        if wanted == binding:
            break
        reporter.say(f"kafka: slf4j-api needs {wanted}, fetching again")
        binding = wanted
    _check_jars(staging, binding)
    shutil.rmtree(cache.libs, ignore_errors=True)
    staging.rename(cache.libs)
    cache.archive.unlink(missing_ok=True)  # a class-data archive is tied to the old jars
    jars = sorted(cache.libs.glob("*.jar"))
    marker = {
        "kafka_version": KAFKA_VERSION,
        "log4j2_version": LOG4J2_VERSION,
        "slf4j_binding": binding,
        "java": java.version,
        "jars": {jar.name: jar.stat().st_size for jar in jars},
    }
    tmp = cache.marker.with_suffix(".tmp")
    tmp.write_text(json.dumps(marker, indent=2) + "\n")
    tmp.replace(cache.marker)
    return jars


def _run_maven(mvn: str, cache: JarCache, staging: Path, binding: str, reporter: Reporter) -> None:
    cache.build_dir.mkdir(parents=True, exist_ok=True)
    pom = cache.build_dir / "pom.xml"
    pom.write_text(render_pom(staging, binding))
    log_path = cache.build_dir / "mvn.log"
    progress = Progress(f"kafka: fetching broker jars {KAFKA_VERSION}", unit="files", stream=reporter.stream)
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [mvn, "-B", "-Dstyle.color=never", "-f", str(pom), "package"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            cwd=cache.build_dir,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            if "Downloaded from" in line and not reporter.quiet:
                progress.update()
        code = proc.wait()
    if not reporter.quiet:
        progress.close("done" if code == 0 else "failed")
    if code != 0:
        raise FetchFailed(
            f"Maven could not fetch the Kafka {KAFKA_VERSION} jars (exit code {code}). "
            f"Full output: {log_path}. Last lines:\n{tail(log_path, 25)}"
        )


def _slf4j_api_version(libs: Path) -> str:
    found = sorted(libs.glob("slf4j-api-*.jar"))
    if not found:
        raise FetchFailed(f"no slf4j-api jar among the copied broker jars in {libs}")
    return found[0].name[len("slf4j-api-") : -len(".jar")]


def _check_jars(libs: Path, binding: str) -> None:
    for needed in (
        f"kafka_2.13-{KAFKA_VERSION}.jar",
        f"log4j-core-{LOG4J2_VERSION}.jar",
        f"{binding}-{LOG4J2_VERSION}.jar",
    ):
        if not (libs / needed).is_file():
            raise FetchFailed(f"Maven finished but {needed} is missing from {libs}")
