"""Which program each scored run of a stream is compared with.

Runs arrive in stream order as ``(playground, outcome)``.  Unusable runs are
left out entirely (no index, no stretch boundary).  Scored runs are numbered
from 0; a run without a playground keeps the previous scored run's.  A
*stretch* is a maximal sequence of consecutive scored runs on one playground:
its first run is compared with nothing, every other run with the previous
scored run.  Going back to an earlier playground starts a new stretch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tree_edit.workspace import Program, Unusable


@dataclass(frozen=True, slots=True)
class RunStep:
    """One scored run.

    :ivar index: the run's index among the stream's scored runs.
    :ivar playground: the run's playground after inheritance (may stay ``None``).
    :ivar program: the run's program.
    :ivar previous: the program to diff against, ``None`` at the start of a stretch.
    """

    index: int
    playground: str | None
    program: Program
    previous: Program | None


def run_steps(runs: Iterable[tuple[str | None, Program | Unusable]]) -> Iterator[RunStep]:
    """The scored runs of one stream with the program each one is compared with."""
    index = 0
    last: RunStep | None = None
    for playground, outcome in runs:
        if isinstance(outcome, Unusable):
            continue
        if playground is None and last is not None:
            playground = last.playground
        previous = last.program if last is not None and last.playground == playground else None
        step = RunStep(index, playground, outcome, previous)
        yield step
        last = step
        index += 1
