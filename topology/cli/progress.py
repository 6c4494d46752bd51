"""A dependency-free progress line for long-running commands (stderr)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Prints ``label  done/total  rate/s`` on one self-overwriting line.

    On a non-terminal stream it prints a line every ``every_s`` seconds instead,
    so CI logs stay readable.
    """

    def __init__(
        self, label: str, total: int | None = None, unit: str = "items",
        stream: TextIO | None = None, every_s: float = 2.0,
    ) -> None:
        self.label, self.total, self.unit = label, total, unit
        self.stream = stream or sys.stderr
        self.every_s = every_s
        self.done = 0
        self.started = time.perf_counter()
        self._last = 0.0
        self._tty = self.stream.isatty()

    def update(self, n: int = 1, extra: str = "") -> None:
        """Count ``n`` more items and redraw when due."""
        self.done += n
        now = time.perf_counter()
        if now - self._last >= (0.1 if self._tty else self.every_s):
            self._last = now
            self._draw(extra)

    def close(self, extra: str = "") -> None:
        """Draw the final state and end the line."""
        self._draw(extra)
        if self._tty:
            self.stream.write("\n")
        self.stream.flush()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def _draw(self, extra: str) -> None:
        rate = self.done / self.elapsed if self.elapsed > 0 else 0.0
        total = f"/{self.total}" if self.total is not None else ""
        pct = ""
        if self.total:
            pct = f" {100.0 * self.done / self.total:5.1f}%"
        text = f"{self.label}: {self.done}{total} {self.unit}{pct}  {rate:,.0f}/s {extra}".rstrip()
        if self._tty:
            self.stream.write("\r\x1b[2K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
