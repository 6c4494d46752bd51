"""The progress line of long commands: counts, percentages and a rate that is
measured only over what the bar saw."""

from __future__ import annotations

import io

import pytest

from vexnudge.cli import progress as progress_module
from vexnudge.cli.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(progress_module.time, "perf_counter", fake)
    return fake


def _lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def _bar(label: str, total: int | None) -> tuple[Progress, io.StringIO]:
    """A bar that draws at every count, into a string."""
    out = io.StringIO()
    return Progress(label, total=total, unit="records", stream=out, every_s=0.0), out


def test_a_bar_started_at_a_reached_count_rates_only_what_came_after(clock) -> None:
    bar, out = _bar("produce", 5000)
    bar.set(1000)  # the first report comes after 1,000 records were sent
    assert _lines(out)[-1] == "produce: 1000/5000 records  20.0%"  # no rate over no time
    clock.now += 0.25
    bar.set(1500)
    assert bar.rate is None  # too short a span to call a rate
    clock.now += 0.75
    bar.set(3000)
    assert bar.rate == pytest.approx(2000.0)  # 2,000 more in 1 s, not 3,000
    assert _lines(out)[-1] == "produce: 3000/5000 records  60.0%  2,000/s"


def test_a_bar_complete_at_its_first_count_shows_no_rate(clock) -> None:
    bar, out = _bar("final tick", 8)
    bar.set(8)
    clock.now += 2.0
    bar.close()
    assert _lines(out)[-1] == "final tick: 8/8 records 100.0%"


def test_a_stalled_bar_shows_zero_per_second(clock) -> None:
    bar, out = _bar("consume", 10)
    bar.set(0)
    clock.now += 1.0
    bar.set(0, extra="waiting")
    assert _lines(out)[-1] == "consume: 0/10 records   0.0%  0/s waiting"


def test_counting_item_by_item_and_the_total_set_later(clock) -> None:
    out = io.StringIO()
    bar = Progress("fetching", unit="files", stream=out, every_s=0.0)
    for i in range(5):
        clock.now += 0.25 if i else 0.0
        bar.update()
    bar.close("done")
    assert _lines(out)[-1] == "fetching: 5 files  4/s done"  # 4 more over 1 s (from the first)
    bar = Progress("consume", stream=out, every_s=0.0)
    bar.set(3, total=6)
    assert _lines(out)[-1] == "consume: 3/6 items  50.0%"


def test_a_non_terminal_stream_gets_a_line_every_period(clock) -> None:
    out = io.StringIO()
    bar = Progress("produce", total=100, stream=out, every_s=2.0)
    bar.update(10)  # the first count is drawn at once
    clock.now += 1.0
    bar.update(10)  # within the period: not drawn
    clock.now += 1.5
    bar.update(10)
    assert [line.split(":")[1].split()[0] for line in _lines(out)] == ["10/100", "30/100"]
