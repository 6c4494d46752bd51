"""docker-compose.kafka.yml stays in step with the local stack and the settings.

The file is read with a small parser for the YAML subset it is written in (block
mappings and sequences, quoted and plain scalars, JSON-style flow lists, ``|``
blocks), so the test needs no YAML library; when PyYAML is importable the two
readings are compared as well.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from topology.settings import KAFKA_VERSION, PROJECT_ROOT, Settings
from vexnudge.stack.kafka import parse_properties, render_server_properties

COMPOSE = PROJECT_ROOT / "docker-compose.kafka.yml"
#: server.properties keys about addresses and paths, checked by meaning rather than by value.
ADDRESS_KEYS = {
    "listeners",
    "advertised.listeners",
    "controller.quorum.voters",
    "listener.security.protocol.map",
    "log.dirs",
}
#: KAFKA_* variables of the apache/kafka image that are not broker properties.
IMAGE_VARS = {"KAFKA_HEAP_OPTS", "KAFKA_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_LOG4J_OPTS"}


# --- a parser for the YAML subset of the compose file ----------------------------------
def _strip_comment(text: str) -> str:
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i].rstrip()
    return text.rstrip()


def _scalar(text: str) -> Any:
    text = _strip_comment(text).strip()
    if text.startswith(('"', "[")):
        return json.loads(text)
    if text.startswith("'"):
        return text[1:-1].replace("''", "'")
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return {"true": True, "false": False, "null": None, "~": None}.get(text, text)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _blank(line: str) -> bool:
    return not _strip_comment(line).strip()


def _block(lines: list[str], i: int, indent: int) -> tuple[Any, int]:
    while i < len(lines) and _blank(lines[i]):
        i += 1
    if i >= len(lines) or _indent(lines[i]) < indent:
        return None, i
    indent = _indent(lines[i])
    if lines[i].lstrip().startswith("- "):
        items = []
        while i < len(lines) and (
            _blank(lines[i]) or (_indent(lines[i]) == indent and lines[i].lstrip().startswith("- "))
        ):
            if not _blank(lines[i]):
                item = lines[i].lstrip()[2:]
                assert not re.match(r"^[\w.-]+:( |$)", item), f"unsupported: mapping in list {item!r}"
                items.append(_scalar(item))
            i += 1
        return items, i
    mapping: dict[str, Any] = {}
    while i < len(lines) and (_blank(lines[i]) or _indent(lines[i]) == indent):
        if _blank(lines[i]):
            i += 1
            continue
        key, sep, rest = _strip_comment(lines[i]).strip().partition(":")
        assert sep and (not rest or rest.startswith(" ")), f"unsupported line {lines[i]!r}"
        rest = rest.strip()
        i += 1
        if rest == "|":
            body: list[str] = []
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
                body.append(lines[i])
                i += 1
            cut = min(_indent(b) for b in body if b.strip())
            mapping[key] = "\n".join(b[cut:] for b in body).rstrip("\n") + "\n"
        elif rest:
            mapping[key] = _scalar(rest)
        else:
            mapping[key], i = _block(lines, i, indent + 1)
    assert i >= len(lines) or _indent(lines[i]) < indent, f"bad indentation at {lines[i]!r}"
    return mapping, i


def parse_compose(text: str) -> dict[str, Any]:
    """The compose file as plain dicts, lists and strings."""
    value, _ = _block(text.splitlines(), 0, 0)
    assert isinstance(value, dict)
    return value


# --- fixtures ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return parse_compose(COMPOSE.read_text())


@pytest.fixture(scope="module")
def kafka_env(compose: dict[str, Any]) -> dict[str, str]:
    env: dict[str, str] = compose["services"]["kafka"]["environment"]
    return env


@pytest.fixture(scope="module")
def properties() -> dict[str, str]:
    defaults = {name: field.default for name, field in Settings.model_fields.items()}
    text = render_server_properties(defaults["kafka_port"], defaults["topic_partitions"], Path("/data"))
    return parse_properties(text)


def _default(name: str) -> Any:
    return Settings.model_fields[name].default


def env_name(prop: str) -> str:
    """The apache/kafka image's variable for a property.

    ``.`` becomes ``_``, ``_`` becomes ``__`` and ``-`` becomes ``___``.
    """
    return "KAFKA_" + prop.replace("-", "\0").replace("_", "__").replace(".", "_").replace("\0", "___").upper()


def listeners(value: str) -> dict[str, tuple[str, int]]:
    """``"A://h:1,B://:2"`` → ``{"A": ("h", 1), "B": ("", 2)}``."""
    out = {}
    for item in value.split(","):
        name, _, address = item.partition("://")
        host, _, port = address.rpartition(":")
        out[name] = (host, int(port))
    return out


# --- tests ------------------------------------------------------------------------------
def test_parser_reads_the_whole_file(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) >= {
        "kafka",
        "postgres",
        "ollama",
        "migrate",
        "worker",
        "gateway",
    }
    assert "FROM python:3.11" in compose["services"]["migrate"]["build"]["dockerfile_inline"]


def test_the_image_copies_every_package_the_install_finds(compose: dict[str, Any]) -> None:
    from setuptools import find_packages

    wanted = {name.split(".")[0] for name in find_packages(str(PROJECT_ROOT), include=_package_patterns())}
    copied = set(
        re.findall(r"^COPY (\w+)/ \1/$", compose["services"]["migrate"]["build"]["dockerfile_inline"], re.MULTILINE)
    )
    assert wanted and copied == wanted


def _package_patterns() -> list[str]:
    text = (PROJECT_ROOT / "pyproject.toml").read_text()
    line = next(row for row in text.splitlines() if row.startswith("include = ["))
    return [item.strip().strip('"') for item in line.split("[", 1)[1].rstrip("]").split(",")]


def test_every_image_is_pinned_to_a_version(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        image = service["image"]
        if image == "vexnudge:local":
            continue
        tag = image.rpartition(":")[2]
        assert ":" in image and tag != "latest" and any(c.isdigit() for c in tag), (name, image)
    base = compose["services"]["migrate"]["build"]["dockerfile_inline"].splitlines()[0]
    assert base.startswith("FROM python:3.11.") and "latest" not in base


def test_parser_agrees_with_pyyaml(compose: dict[str, Any]) -> None:
    yaml = pytest.importorskip("yaml")
    assert yaml.safe_load(COMPOSE.read_text()) == compose


def test_broker_image_is_the_pinned_version(compose: dict[str, Any]) -> None:
    assert compose["services"]["kafka"]["image"] == f"apache/kafka:{KAFKA_VERSION}"


def test_broker_overrides_match_server_properties(kafka_env: dict[str, str], properties: dict[str, str]) -> None:
    for key, value in properties.items():
        if key not in ADDRESS_KEYS:
            assert kafka_env.get(env_name(key)) == value, f"{env_name(key)} should be {value!r}"
    known = {env_name(k) for k in properties} | IMAGE_VARS
    unknown = {k for k in kafka_env if k.startswith("KAFKA_")} - known
    assert not unknown, f"KAFKA_* variables with no server.properties twin: {sorted(unknown)}"


def test_partitions_are_the_one_partition_count(
    compose: dict[str, Any], kafka_env: dict[str, str], properties: dict[str, str]
) -> None:
    count = str(_default("topic_partitions"))
    assert properties["num.partitions"] == kafka_env["KAFKA_NUM_PARTITIONS"] == count == "8"
    for app in ("worker", "gateway"):
        assert compose["services"][app]["environment"]["TOPIC_PARTITIONS"] == count


def test_replication_is_one_everywhere(
    compose: dict[str, Any], kafka_env: dict[str, str], properties: dict[str, str]
) -> None:
    for key, value in properties.items():
        if key.endswith(("replication.factor", "min.isr", "min.insync.replicas")):
            assert value == "1" and kafka_env[env_name(key)] == "1", key
    for app in ("worker", "gateway"):
        assert compose["services"][app]["environment"]["TOPIC_REPLICATION_FACTOR"] == "1"


def test_listeners_are_reachable_where_advertised(
    compose: dict[str, Any], kafka_env: dict[str, str], properties: dict[str, str]
) -> None:
    bound = listeners(kafka_env["KAFKA_LISTENERS"])
    advertised = listeners(kafka_env["KAFKA_ADVERTISED_LISTENERS"])
    protocols = dict(p.split(":") for p in kafka_env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    controller = kafka_env["KAFKA_CONTROLLER_LISTENER_NAMES"]
    assert set(bound) == set(protocols) and controller in bound and controller not in advertised
    for name, (_, port) in advertised.items():
        assert bound[name][1] == port, f"{name} is advertised on {port} but bound to {bound[name]}"
    # Containers reach the broker at its service name, on the inter-broker listener.
    internal = kafka_env["KAFKA_INTER_BROKER_LISTENER_NAME"]
    host, port = advertised[internal]
    assert host == compose["services"]["kafka"]["hostname"] == "kafka"
    for app in ("worker", "gateway"):
        assert compose["services"][app]["environment"]["KAFKA_BOOTSTRAP_SERVERS"] == f"{host}:{port}"
    assert kafka_env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == f"1@{host}:{bound[controller][1]}"
    # This machine reaches it where the local stack's broker is advertised, via a loopback port.
    (local,) = listeners(properties["advertised.listeners"]).values()
    (outside,) = [a for n, a in advertised.items() if n != internal]
    assert outside == local == ("127.0.0.1", _default("kafka_port"))
    assert f"127.0.0.1:{outside[1]}:{outside[1]}" in compose["services"]["kafka"]["ports"]


def test_apps_use_settings_variables(compose: dict[str, Any]) -> None:
    fields = {name.upper() for name in Settings.model_fields}
    common = {
        "KAFKA_BOOTSTRAP_SERVERS",
        "DATABASE_URL",
        "OLLAMA_HOST",
        "OLLAMA_MODEL",
        "TOPIC_PARTITIONS",
        "TOPIC_REPLICATION_FACTOR",
    }
    for app in ("worker", "gateway", "migrate"):
        env = compose["services"][app]["environment"]
        assert set(env) <= fields, f"{app}: not settings: {sorted(set(env) - fields)}"
        if app != "migrate":
            assert common <= set(env)
        url = urlsplit(env["DATABASE_URL"])
        local = urlsplit(_default("database_url").get_secret_value())
        assert (url.hostname, url.port, url.username, url.path) == (
            "postgres",
            5432,
            local.username,
            local.path,
        )
    postgres = compose["services"]["postgres"]
    assert postgres["environment"]["POSTGRES_USER"] == local.username
    assert f"127.0.0.1:{_default('postgres_port')}:5432" in postgres["ports"]


def test_every_published_port_is_loopback_only(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        for mapping in service.get("ports", []):
            assert mapping.startswith("127.0.0.1:"), f"{name} publishes {mapping} beyond loopback"


# --- the parser itself ------------------------------------------------------------------
def test_parser_subset() -> None:
    text = """
top:   # comment
  plain: value # trailing
  quoted: "a # not a comment"
  single: 'it''s'
  list:
    - "x"
    - y
  flow: ["CMD", "a b"]
  empty:
  block: |
    line 1
      line 2
  after: 1
"""
    assert parse_compose(text) == {
        "top": {
            "plain": "value",
            "quoted": "a # not a comment",
            "single": "it's",
            "list": ["x", "y"],
            "flow": ["CMD", "a b"],
            "empty": None,
            "block": "line 1\n  line 2\n",
            "after": 1,
        }
    }


def test_env_name_follows_the_image_convention() -> None:
    assert env_name("log.retention.ms") == "KAFKA_LOG_RETENTION_MS"
    assert env_name("a_b.c-d") == "KAFKA_A__B_C___D"
