"""Human output of the stack commands: one-line messages and a waiting ticker (stderr)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Reporter:
    """Writes ``stack: ...`` lines; ``quiet`` silences everything but errors."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet

    def say(self, message: str) -> None:
        """One line of progress."""
        if not self.quiet:
            self.stream.write(f"stack: {message}\n")
            self.stream.flush()

    def ticker(self, label: str) -> Ticker:
        """A ticker for a wait of unknown length."""
        return Ticker(label, self.stream, enabled=not self.quiet)


class Ticker:
    """``label ... 4.0 s`` redrawn in place on a terminal, a line every 5 s elsewhere."""

    def __init__(self, label: str, stream: TextIO, enabled: bool = True) -> None:
        self.label, self.stream, self.enabled = label, stream, enabled
        self.started = time.monotonic()
        self._tty = stream.isatty()
        self._last = self.started

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def tick(self) -> None:
        """Redraw when due; call it from the wait loop."""
        now = time.monotonic()
        if self.enabled and now - self._last >= (0.2 if self._tty else 5.0):
            self._last = now
            self._draw(f"{self.label} ... {self.elapsed:.0f} s")

    def done(self, outcome: str) -> None:
        """Final line: ``label: outcome (2.3 s)``."""
        if self.enabled:
            self._draw(f"{self.label}: {outcome} ({self.elapsed:.1f} s)")
            if self._tty:
                self.stream.write("\n")
            self.stream.flush()

    def _draw(self, text: str) -> None:
        if self._tty:
            self.stream.write("\r\x1b[2K" + "stack: " + text)
        else:
            self.stream.write("stack: " + text + "\n")
        self.stream.flush()
