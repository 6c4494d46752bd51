"""``vexnudge produce --shuffle-within``: the options, their errors, and records that keep their line numbers."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

import pytest

from streams.local import read_lines
from tests.datafiles import SAMPLE_MALFORMED
from topology.settings import load_settings
from vexnudge import producer as producer_module
from vexnudge.cli import build_parser
from vexnudge.cli.produce import sent_order
from vexnudge.disorder import arrival_order


def vexnudge(*args: str) -> subprocess.CompletedProcess[str]:
    """The command line in a child process, pointed at no broker."""
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9", "TOPIC_PREFIX": "t-nobroker."}
    return subprocess.run(
        [sys.executable, "-m", "vexnudge.cli", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_help_lists_the_disorder_options_and_the_default_seed() -> None:
    done = vexnudge("produce", "--help")
    assert done.returncode == 0, done.stderr
    for option in ("--shuffle-within SECONDS", "--seed N", "--resend FRACTION", "--speed", "--skip-invalid"):
        assert option in done.stdout
    assert "(default: 0)" in " ".join(done.stdout.split())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shuffle-within", "-1"], "--shuffle-within: must be a finite number of seconds >= 0"),
        (["--shuffle-within", "soon"], "not a number of seconds"),
        (["--shuffle-within", "5", "--resend", "1"], "--resend: must be a fraction in [0, 1)"),
        (["--seed", "3"], "--seed needs --shuffle-within"),
    ],
)
def test_a_bad_value_exits_2_with_a_message(tmp_path, args: list[str], message: str) -> None:
    lines = tmp_path / "two.ndjson"
    lines.write_text('{"id": 1}\n{"id": 2}\n')
    done = vexnudge("produce", str(lines), *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_without_the_option_the_file_is_sent_in_file_order() -> None:
    lines = read_lines(SAMPLE_MALFORMED.read_bytes())
    args = build_parser().parse_args(["produce", str(SAMPLE_MALFORMED)])
    assert sent_order(args, lines) == (lines, None, "")


def test_the_option_sends_the_seeded_arrival_order_with_line_numbers() -> None:
    lines = read_lines(SAMPLE_MALFORMED.read_bytes())
    args = build_parser().parse_args(["produce", str(SAMPLE_MALFORMED), "--shuffle-within", "5", "--resend", "0.05"])
    sent, numbers, note = sent_order(args, lines)
    expected = arrival_order(lines, 5, seed=0, resend=0.05)  # no --seed: seed 0
    assert list(zip(numbers or [], sent, strict=True)) == expected
    assert "seed 0" in note


class FakeProducer:
    """Records what ``produce_lines`` sends (no broker)."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes, list[tuple[str, bytes]]]] = []

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def flush(self) -> None: ...

    async def send(self, topic: str, value: bytes, key: bytes | None, headers: list[tuple[str, bytes]]) -> Any:
        self.sent.append((value, headers))
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done


def test_produced_records_carry_their_file_line_number(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeProducer()
    monkeypatch.setattr(producer_module, "make_producer", lambda settings: fake)
    lines = read_lines(SAMPLE_MALFORMED.read_bytes())[:60]
    order = arrival_order(lines, 10, seed=5, resend=0.1)
    assert len(order) > len(lines) and sorted(order) != order  # resent copies, out of file order
    sent = [line for _, line in order]
    stats = asyncio.run(producer_module.produce_lines(load_settings(), sent, numbers=[number for number, _ in order]))
    assert stats.lines == len(order)
    headers = [dict(h)[producer_module.LINE_HEADER] for _, h in fake.sent]
    assert [(int(h), value) for h, (value, _) in zip(headers, fake.sent, strict=True)] == order
