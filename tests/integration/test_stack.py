"""The local stack against real clients: the broker, PostgreSQL and the migration runner."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from delivery.migrate import ChecksumMismatch, MigrationError, load_migrations, migrate, migrate_url
from topology.settings import Settings
from vexnudge.stack import lifecycle
from vexnudge.stack.errors import PortInUse
from vexnudge.stack.report import Reporter

pytestmark = pytest.mark.integration


def test_up_is_idempotent(stack: Settings) -> None:
    before = {s.service: s.pid for s in lifecycle.status(stack)}
    result = lifecycle.up(stack, Reporter(quiet=True))
    assert result.started == []
    assert set(result.outcomes.values()) <= {"running", "shared"}
    assert {s.service: s.pid for s in lifecycle.status(stack)} == before


def test_status_command_reports_healthy(stack: Settings) -> None:
    quiet = subprocess.run(
        [sys.executable, "-m", "vexnudge.cli", "stack", "status", "--quiet"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert quiet.returncode == 0 and quiet.stdout == ""
    loud = subprocess.run(
        [sys.executable, "-m", "vexnudge.cli", "stack", "status"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "kafka" in loud.stdout and "postgres" in loud.stdout and "log: " in loud.stdout


async def test_broker_runs_our_configuration(stack: Settings) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=stack.kafka_bootstrap_servers)
    await admin.start()
    try:
        response = await admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")])
    finally:
        await admin.close()
    config = {entry[0]: entry[1] for entry in response[0].resources[0][4]}
    assert config["auto.create.topics.enable"] == "false"
    assert config["num.partitions"] == str(stack.topic_partitions)
    assert config["offsets.topic.num.partitions"] == "1"
    assert config["group.initial.rebalance.delay.ms"] == "0"
    assert config["transaction.state.log.replication.factor"] == "1"


async def test_topic_with_partitions_round_trips_a_message(stack: Settings, unique_prefix: str) -> None:
    topic = f"{unique_prefix}roundtrip"
    admin = AIOKafkaAdminClient(bootstrap_servers=stack.kafka_bootstrap_servers)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=stack.topic_partitions, replication_factor=1)])
        # The metadata lists a new topic's partitions a moment after the creation returns.
        deadline = asyncio.get_running_loop().time() + 10.0
        while True:
            described = await admin.describe_topics([topic])
            if described[0]["partitions"] or asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(0.05)
    finally:
        await admin.close()
    assert len(described[0]["partitions"]) == stack.topic_partitions == 8

    producer = AIOKafkaProducer(bootstrap_servers=stack.kafka_bootstrap_servers)
    await producer.start()
    try:
        sent = await producer.send_and_wait(topic, b"hello", key=b"student-1", partition=5)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=stack.kafka_bootstrap_servers, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, 5)])
        await consumer.seek_to_beginning(TopicPartition(topic, 5))
        message = await asyncio.wait_for(consumer.getone(), 20)
    finally:
        await consumer.stop()
    assert (message.key, message.value, message.offset) == (b"student-1", b"hello", sent.offset)


async def test_postgres_answers_and_lists_the_first_migration(stack: Settings) -> None:
    conn = await asyncpg.connect(stack.database_url.get_secret_value(), timeout=10)
    try:
        assert await conn.fetchval("select 1") == 1
        versions = [
            r["version"] for r in await conn.fetch("select version from public.schema_migrations order by version")
        ]
        schemas = {r["nspname"] for r in await conn.fetch("select nspname from pg_namespace")}
    finally:
        await conn.close()
    assert versions[0] == 1 and versions == sorted(set(versions))
    assert {"chat", "event_logs"} <= schemas


async def test_migrations_rerun_is_a_no_op(stack: Settings) -> None:
    report = await migrate_url(stack.database_url.get_secret_value())
    assert report.applied == []
    assert report.already_applied == len(load_migrations())


@pytest.fixture
async def scratch_schema(stack: Settings) -> AsyncIterator[tuple[asyncpg.Connection, str]]:
    """A connection plus a throwaway schema ``t_<hex>`` (dropped afterwards)."""
    conn = await asyncpg.connect(stack.database_url.get_secret_value(), timeout=10)
    schema = f"t_{uuid.uuid4().hex[:10]}"
    await conn.execute(f'create schema "{schema}"')
    try:
        yield conn, schema
    finally:
        await conn.execute(f'drop schema "{schema}" cascade')
        await conn.close()


async def test_changed_migration_is_refused(scratch_schema: tuple[asyncpg.Connection, str], tmp_path: Path) -> None:
    conn, schema = scratch_schema
    table = f"{schema}.schema_migrations"
    (tmp_path / "0001_things.sql").write_text(f"create table {schema}.things (id int primary key);")
    (tmp_path / "0002_more.sql").write_text(f"alter table {schema}.things add column name text;")

    first = await migrate(conn, load_migrations(tmp_path), table=table)
    again = await migrate(conn, load_migrations(tmp_path), table=table)
    assert (first.applied, again.applied, again.already_applied) == (
        ["0001_things", "0002_more"],
        [],
        2,
    )

    (tmp_path / "0001_things.sql").write_text(f"create table {schema}.things (id bigint);")
    (tmp_path / "0003_new.sql").write_text(f"create table {schema}.newer (id int);")
    with pytest.raises(ChecksumMismatch, match=r"0001_things\.sql was changed after it was applied"):
        await migrate(conn, load_migrations(tmp_path), table=table)
    assert await conn.fetchval("select to_regclass($1)", f"{schema}.newer") is None


async def test_failed_migration_is_rolled_back(scratch_schema: tuple[asyncpg.Connection, str], tmp_path: Path) -> None:
    conn, schema = scratch_schema
    table = f"{schema}.schema_migrations"
    (tmp_path / "0001_half.sql").write_text(f"create table {schema}.half (id int); select no_such_function();")
    with pytest.raises(MigrationError, match=r"0001_half\.sql failed and was rolled back"):
        await migrate(conn, load_migrations(tmp_path), table=table)
    assert await conn.fetchval("select to_regclass($1)", f"{schema}.half") is None
    assert await conn.fetchval(f'select count(*) from "{schema}".schema_migrations') == 0


def test_a_stack_of_another_folder_is_shared_not_stopped(stack: Settings, tmp_path: Path) -> None:
    # The stack under test may itself be shared from a third folder: its owner is the owner.
    owners = [s.owner or str(stack.stack_dir.resolve()) for s in lifecycle.status(stack)]
    other = stack.model_copy(update={"stack_dir": tmp_path / "clone" / ".vexnudge"})
    states = lifecycle.status(other)
    assert [s.status for s in states] == ["shared", "shared"]
    assert [s.owner for s in states] == owners
    assert set(lifecycle.up(other, Reporter(quiet=True)).outcomes.values()) == {"shared"}
    assert lifecycle.down(other, Reporter(quiet=True)) == {"postgres": "shared", "kafka": "shared"}
    assert all(s.healthy for s in lifecycle.status(stack))


def test_a_port_held_by_a_stranger_is_a_clear_error(stack: Settings, tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        blocked = stack.model_copy(update={"stack_dir": tmp_path / ".vexnudge", "postgres_port": port})
        (state,) = lifecycle.status(blocked, only=["postgres"])
        assert state.status == "blocked" and "not part of a vexnudge stack" in state.detail
        with pytest.raises(PortInUse, match=f"port {port}"):
            lifecycle.up(blocked, Reporter(quiet=True), only=["postgres"])
