"""Incremental episode segmentation of one session stream.

Fed one event at a time (its index is its position in the session stream),
it emits finished CODE / RUN / RESET episodes and INACTIVE_PAUSE /
POST_RUN_PAUSE pauses as soon as they are certain:

* INACTIVE_PAUSE after event ``i`` when the gap to event ``i+1`` is ``>= 300``
  (and ``5 < gap <= 86400``); no episode crosses it.
* CODE takes in following CODE and soft events; RUN takes in soft events and
  ends with the first ``projectEnd`` (included) or just before any other
  event; RESET is one event; other events outside an episode are skipped.
* POST_RUN_PAUSE after a RUN that ended with ``projectEnd`` at ``p``: the first
  following event that is not a ``playground*`` event, ``5 < gap < 300``.

:meth:`Segmenter.close` ends the open episode (end of input, or an idle spell
long enough that no later event can join it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast

from streams.config import EngineConfig
from topology.schemas import EpisodeType, PauseType

CODE_EVENTS = frozenset({"blockMoved", "blockChanged", "blockCreated", "blockDeleted"})
RESET_EVENTS = frozenset({"loadProject", "newProject"})
MENU_EVENTS = frozenset({"menuOpen", "menuSelect", "menuClose"})
SOFT_EVENTS = MENU_EVENTS | frozenset(
    {
        "playgroundOpen",
        "playgroundClosed",
        "playgroundHidden",
        "playgroundShow",
        "playgroundReset",
        "playgroundData",
    }
)
POST_RUN_TRANSPARENT = SOFT_EVENTS - MENU_EVENTS
RUN_START, RUN_END = "runProject", "projectEnd"


@dataclass(frozen=True, slots=True)
class Episode:
    type: EpisodeType
    start_idx: int
    end_idx: int
    start_ts: float
    end_ts: float
    event_count: int
    soft_count: int


@dataclass(frozen=True, slots=True)
class Pause:
    type: PauseType
    after_idx: int
    start_ts: float
    end_ts: float

    @property
    def duration(self) -> float:
        return self.end_ts - self.start_ts


Segment = Episode | Pause


@dataclass(slots=True)
class _Open:
    type: EpisodeType
    start_idx: int
    start_ts: float
    end_ts: float
    count: int
    soft: int

    def finish(self) -> Episode:
        end = self.start_idx + self.count
        return Episode(self.type, self.start_idx, end, self.start_ts, self.end_ts, self.count, self.soft)


class Segmenter:
    """Segmentation state of one session stream (JSON round-trips via to/from_json)."""

    __slots__ = ("n", "last_ts", "open", "post_run", "config")

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.n = 0
        self.last_ts: float | None = None
        self.open: _Open | None = None
        self.post_run: tuple[int, float] | None = None

    @property
    def run_open(self) -> bool:
        """A RUN episode is open: the student's run is in progress."""
        return self.open is not None and self.open.type is EpisodeType.RUN

    def feed(self, event_type: str, ts: float) -> list[Segment]:
        """Take the next event of the session; return what it finished, in order."""
        out: list[Segment] = []
        index, hard = self.n, self._hard_gap(ts)
        self._post_run_pause(event_type, ts, out)
        if hard and self.last_ts is not None:
            out.append(Pause(PauseType.INACTIVE_PAUSE, index - 1, self.last_ts, ts))
        if self.open is not None and (hard or not self._extend(event_type, ts, out)):
            out.append(self.open.finish())
            self.open = None
        if self.open is None and not self._joined_last(index):
            self._start(event_type, index, ts, out)
        self.n, self.last_ts = index + 1, ts
        return out

    def close(self) -> list[Segment]:
        """End the open episode (end of input or a certain hard boundary)."""
        if self.open is None:
            return []
        done, self.open = self.open.finish(), None
        return [done]

    def idle_closes(self, now: float) -> bool:
        """True when, at ``now``, any next event must start after a hard boundary."""
        return self.last_ts is not None and now - self.last_ts >= self.config.pause_threshold_s

    def _hard_gap(self, ts: float) -> bool:
        if self.last_ts is None:
            return False
        gap, c = ts - self.last_ts, self.config
        return c.short_pause_min_s < gap <= c.pause_max_s and gap >= c.pause_threshold_s

    def _post_run_pause(self, event_type: str, ts: float, out: list[Segment]) -> None:
        if self.post_run is None or event_type in POST_RUN_TRANSPARENT:
            return
        after, start = self.post_run
        self.post_run = None
        if self.config.short_pause_min_s < ts - start < self.config.pause_threshold_s:
            out.append(Pause(PauseType.POST_RUN_PAUSE, after, start, ts))

    def _extend(self, event_type: str, ts: float, out: list[Segment]) -> bool:
        """Try to take the event into the open episode; False if it cannot join."""
        episode = self.open
        assert episode is not None
        soft = event_type in SOFT_EVENTS
        if episode.type is EpisodeType.CODE and (event_type in CODE_EVENTS or soft):
            pass
        elif episode.type is EpisodeType.RUN and (event_type == RUN_END or soft):
            pass
        else:
            return False
        episode.count += 1
        episode.soft += int(soft)
        episode.end_ts = ts
        if event_type == RUN_END and episode.type is EpisodeType.RUN:
            out.append(episode.finish())
            self.open = None
            self.post_run = (self.n, ts)
        return True

    def _joined_last(self, index: int) -> bool:
        """The current event was just taken in by (and closed) a RUN episode."""
        return self.post_run is not None and self.post_run[0] == index

    def _start(self, event_type: str, index: int, ts: float, out: list[Segment]) -> None:
        if event_type in CODE_EVENTS:
            self.open = _Open(EpisodeType.CODE, index, ts, ts, 1, 0)
        elif event_type == RUN_START:
            self.open = _Open(EpisodeType.RUN, index, ts, ts, 1, 0)
        elif event_type in RESET_EVENTS:
            out.append(Episode(EpisodeType.RESET, index, index + 1, ts, ts, 1, 0))

    def to_json(self) -> list[object]:
        """Compact JSON form for table storage."""
        episode = self.open
        opened = (
            None
            if episode is None
            else [
                episode.type.value,
                episode.start_idx,
                episode.start_ts,
                episode.end_ts,
                episode.count,
                episode.soft,
            ]
        )
        return [self.n, self.last_ts, opened, list(self.post_run) if self.post_run else None]

    @classmethod
    def from_json(cls, raw: list[object], config: EngineConfig) -> Segmenter:
        seg = cls(config)
        n, last_ts, opened, post_run = raw
        seg.n, seg.last_ts = int(n), last_ts  # type: ignore[call-overload, assignment]
        if opened is not None:
            kind, start, start_ts, end_ts, count, soft = cast(list[Any], opened)
            seg.open = _Open(EpisodeType(kind), start, start_ts, end_ts, count, soft)
        if post_run is not None:
            seg.post_run = (int(post_run[0]), float(post_run[1]))  # type: ignore[index]
        return seg


def kind_of(segment: Segment) -> Literal["episode", "pause"]:
    """``episode`` or ``pause``."""
    return "episode" if isinstance(segment, Episode) else "pause"
