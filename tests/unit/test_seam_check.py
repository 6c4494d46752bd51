"""The seam's start-up check: it passes on the installed libraries, names a
missing internal or a differing version, agrees with the README's table and
the pins in pyproject.toml, and ``vexnudge worker`` turns a failure into a
message and exit code 2."""

from __future__ import annotations

import argparse
import ast
import re
import tomllib
from importlib import metadata
from pathlib import Path

import aiokafka
import pytest
from faust.transport import consumer as faust_consumer
from faust.transport.drivers import aiokafka as driver
from packaging.requirements import Requirement

from topology.seam import check
from topology.seam.check import INTERNALS, VERSIONS, SeamMismatch, verify_internals
from topology.settings import PROJECT_ROOT, Settings

SEAM = PROJECT_ROOT / "topology" / "seam"
#: Private names the seam's modules define for themselves (or the standard library's ``os._exit``).
SEAM_OWN = frozenset(
    {"_aiokafka", "_append", "_enqueue", "_kafka", "_vex_seek_gate", "_deadline", "_overdue", "_exit", "seek_gate"}
)


def test_the_installed_libraries_pass() -> None:
    verify_internals()


def test_a_removed_method_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(driver.AIOKafkaConsumerThread, "_fetch_records")
    with pytest.raises(SeamMismatch) as failed:
        verify_internals()
    assert failed.value.missing == ["faust.transport.drivers.aiokafka.AIOKafkaConsumerThread._fetch_records"]
    assert "faust.transport.drivers.aiokafka.AIOKafkaConsumerThread._fetch_records" in str(failed.value)
    assert failed.value.versions == []


def test_a_removed_module_constant_is_named_and_a_public_api_is_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(aiokafka.AIOKafkaProducer, "create_batch")  # not in the table: no complaint
    verify_internals()
    monkeypatch.delattr(faust_consumer, "CONSUMER_FETCHING")
    with pytest.raises(SeamMismatch, match=r"faust\.transport\.consumer\.CONSUMER_FETCHING"):
        verify_internals()


def test_every_missing_internal_is_named_including_instance_attributes(monkeypatch: pytest.MonkeyPatch) -> None:
    gone = [
        ("faust.transport.consumer.Consumer", "_acked_by_partition"),  # a rename upstream
        ("aiokafka.producer.message_accumulator.MessageAccumulator", "_queued_batches"),
        ("faust.transport.drivers.NoSuchThing", "aliases"),
    ]
    monkeypatch.setattr(check, "INTERNALS", INTERNALS + tuple(gone))
    with pytest.raises(SeamMismatch) as failed:
        verify_internals()
    assert failed.value.missing == [f"{owner}.{name}" for owner, name in gone]
    assert "3 internal(s) the seam relies on are missing" in str(failed.value)


def test_instance_attributes_are_found_in_the_source_of_the_class_and_its_bases() -> None:
    assert check._defines("faust.transport.consumer.Consumer", "_acked")  # set in __init__
    assert check._defines("faust.transport.consumer.Consumer", "_paused_partitions")  # set in _reset_state
    assert check._defines("faust.transport.drivers.aiokafka.Consumer", "_stopped")  # set by mode's Service
    assert not check._defines("faust.transport.consumer.Consumer", "_acked_by_partition")


def test_a_differing_version_is_named_with_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    installed, real = {"faust-streaming": "0.16.0"}, metadata.version

    def version_of(name: str) -> str:
        return installed.get(name) or real(name)

    monkeypatch.setattr(metadata, "version", version_of)
    with pytest.raises(SeamMismatch) as failed:
        verify_internals()
    message = str(failed.value)
    assert failed.value.versions == [("faust-streaming", "0.16.0", "0.15.3")]
    assert "faust-streaming: installed 0.16.0, the seam was written for 0.15.3" in message
    assert "pip install faust-streaming==0.15.3" in message  # pin back...
    assert "topology/seam/README.md" in message and "topology/seam/check.py" in message  # ...or update the seam


def test_a_library_that_is_not_installed_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    real = metadata.version

    def version_of(name: str) -> str:
        if name == "aiokafka":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", version_of)
    with pytest.raises(SeamMismatch, match="aiokafka: installed nothing, the seam was written for 0.14.0"):
        verify_internals()


def readme_internals() -> list[tuple[str, str]]:
    """(owner, internal) of each row of the README's table of internals."""
    text = (SEAM / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Internals\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    pairs = []
    for row in rows:
        owner, internal = (cell.strip() for cell in row.strip("|").split("|")[:2])
        assert re.fullmatch(r"`[\w.]+`", owner) and re.fullmatch(r"`\w+`", internal), row
        pairs.append((owner.strip("`"), internal.strip("`")))
    return pairs


def test_the_readme_lists_exactly_the_internals_the_check_checks() -> None:
    listed = readme_internals()
    assert len(listed) == len(set(listed)), "a row is listed twice"
    assert len(INTERNALS) == len(set(INTERNALS)), "an internal is checked twice"
    assert sorted(set(listed) - set(INTERNALS)) == [], "in the README, not in check.INTERNALS"
    assert sorted(set(INTERNALS) - set(listed)) == [], "in check.INTERNALS, not in the README"


def seam_names(path: Path) -> set[str]:
    """The upstream names a seam module may depend on: every private attribute
    it reads or writes (also through ``getattr``), and every attribute its
    subclasses of Faust's, mode's or aiokafka's classes override."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            names.add(node.attr)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "setattr", "hasattr"}
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and str(node.args[1].value).startswith("_")
        ):
            names.add(str(node.args[1].value))
        elif isinstance(node, ast.ClassDef) and node.bases:  # a subclass of an upstream class
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.Assign):
                    names |= {t.id for t in item.targets if isinstance(t, ast.Name)}
    return {name for name in names if not name.startswith("__")}


def test_the_seam_touches_no_internal_the_table_leaves_out() -> None:
    listed = {name for _owner, name in INTERNALS}
    unlisted = {
        f"{path.name}: {name}"
        for path in sorted(SEAM.glob("*.py"))
        if path.name != "check.py"
        for name in seam_names(path) - listed - SEAM_OWN
    }
    assert not unlisted, f"add these to check.INTERNALS and README.md (or to SEAM_OWN): {sorted(unlisted)}"


def test_the_scan_sees_getattr_and_overrides(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("class C(Base):\n    def _fetch(self):\n        return getattr(self.x, '_batches')._y\n")
    assert seam_names(module) == {"_fetch", "_batches", "_y"}


def test_the_versions_agree_with_pyproject() -> None:
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = {req.name: req.specifier for req in map(Requirement, project["dependencies"])}
    assert set(VERSIONS) <= set(pins)
    for name, version in VERSIONS.items():
        assert [spec.version for spec in pins[name]] == [version], f"{name}: {pins[name]} in pyproject.toml"
        assert version in pins[name]
    assert str(pins["faust-streaming"]) == f"=={VERSIONS['faust-streaming']}"
    assert str(pins["aiokafka"]) == f"=={VERSIONS['aiokafka']}"


def worker_args(*argv: str) -> argparse.Namespace:
    from vexnudge.cli import worker

    parser = argparse.ArgumentParser()
    worker.register(parser.add_subparsers())
    return parser.parse_args(["worker", *argv])


def test_the_worker_refuses_to_start_with_the_message_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from vexnudge.cli import worker

    def mismatch() -> None:
        raise SeamMismatch([("aiokafka", "0.15.0", "0.14.0")], ["aiokafka.AIOKafkaProducer._message_accumulator"])

    def no_broker(*args: object) -> None:
        raise AssertionError("the worker went on to the broker")

    monkeypatch.setattr(check, "verify_internals", mismatch)
    monkeypatch.setattr("topology.kafka_admin.ensure_topics", no_broker)
    assert worker.run(worker_args("--web-port", "0"), Settings()) == 2
    err = capsys.readouterr().err
    assert err.startswith("vexnudge worker: the Faust seam")
    assert "aiokafka: installed 0.15.0" in err and "_message_accumulator" in err
    assert "Traceback" not in err
