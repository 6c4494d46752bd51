"""A dependency-free progress line for long-running commands (stderr)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

#: The shortest span a rate is shown for: over less, one batch of counts
#: arriving at once would read as millions per second.
MIN_RATE_SPAN_S = 0.5


class Progress:
    """Prints ``label  done/total  rate/s`` on one self-overwriting line.

    On a non-terminal stream it prints a line every ``every_s`` seconds instead,
    so CI logs stay readable.  The rate is measured from the first count the
    bar saw (a bar may start at a count reached before it existed) and shown
    once that is at least :data:`MIN_RATE_SPAN_S` ago.
    """

    def __init__(
        self,
        label: str,
        total: int | None = None,
        unit: str = "items",
        stream: TextIO | None = None,
        every_s: float = 2.0,
    ) -> None:
        self.label, self.total, self.unit = label, total, unit
        self.stream = stream or sys.stderr
        self.every_s = every_s
        self.done = 0
        self._last = 0.0
        self._tty = self.stream.isatty()
        self._base: tuple[int, float] | None = None
        """(count, time) of the first count; the rate is measured from there."""

    def update(self, n: int = 1, extra: str = "") -> None:
        """Count ``n`` more items and redraw when due."""
        self.done += n
        now = time.perf_counter()
        if self._base is None:
            self._base = (self.done, now)
        if now - self._last >= (0.1 if self._tty else self.every_s):
            self._last = now
            self._draw(extra)

    def set(self, done: int, total: int | None = None, extra: str = "") -> None:
        """Set the count reached (and the total) and redraw when due."""
        if total is not None:
            self.total = total
        self.update(done - self.done, extra)

    def close(self, extra: str = "") -> None:
        """Draw the final state and end the line."""
        self._draw(extra)
        if self._tty:
            self.stream.write("\n")
        self.stream.flush()

    @property
    def rate(self) -> float | None:
        """Items per second since the first count; None before :data:`MIN_RATE_SPAN_S`
        and for a bar that was complete at its first count."""
        if self._base is None:
            return None
        done, at = self._base
        span = time.perf_counter() - at
        if span < MIN_RATE_SPAN_S or (self.total is not None and done >= self.total):
            return None
        return (self.done - done) / span

    def _draw(self, extra: str) -> None:
        total = f"/{self.total}" if self.total is not None else ""
        pct = ""
        if self.total:
            pct = f" {100.0 * self.done / self.total:5.1f}%"
        rate = self.rate
        speed = f"  {rate:,.0f}/s" if rate is not None else ""
        text = f"{self.label}: {self.done}{total} {self.unit}{pct}{speed} {extra}".rstrip()
        if self._tty:
            self.stream.write("\r\x1b[2K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
