"""The incremental segmenter, case by case (the goldens cover whole files)."""

from __future__ import annotations

import pytest

from streams.config import EngineConfig
from streams.episodes import Episode, Pause, Segmenter


def segment(events: list[tuple[str, float]], close: bool = True) -> tuple[list[tuple], list[tuple]]:
    seg, out = Segmenter(EngineConfig()), []
    for kind, ts in events:
        out += seg.feed(kind, ts)
    if close:
        out += seg.close()
    episodes = [(e.type.value, e.start_idx, e.end_idx, e.soft_count) for e in out if isinstance(e, Episode)]
    pauses = [(p.type.value, p.after_idx, p.duration) for p in out if isinstance(p, Pause)]
    return episodes, pauses


@pytest.mark.parametrize(
    ("events", "episodes", "pauses"),
    [
        ([], [], []),
        ([("blockMoved", 0), ("blockChanged", 10), ("blockCreated", 20)], [("CODE", 0, 3, 0)], []),
        ([("runProject", 0), ("projectEnd", 10)], [("RUN", 0, 2, 0)], []),
        ([("loadProject", 0), ("newProject", 1)], [("RESET", 0, 1, 0), ("RESET", 1, 2, 0)], []),
        ([("blockMoved", 0), ("menuOpen", 1), ("blockMoved", 2)], [("CODE", 0, 3, 1)], []),
        ([("menuOpen", 0), ("blockMoved", 1)], [("CODE", 1, 2, 0)], []),  # orphan soft dropped
        ([("projectEnd", 0), ("PlaygroundChange", 1)], [], []),  # unknown/lone skipped
        (
            [("blockMoved", 0), ("blockMoved", 300)],  # hard gap splits
            [("CODE", 0, 1, 0), ("CODE", 1, 2, 0)],
            [("INACTIVE_PAUSE", 0, 300)],
        ),
        ([("blockMoved", 0), ("blockMoved", 299)], [("CODE", 0, 2, 0)], []),
        ([("blockMoved", 0), ("blockMoved", 86401)], [("CODE", 0, 2, 0)], []),  # > 1 day: no pause
        ([("blockMoved", 0), ("runProject", 5)], [("CODE", 0, 1, 0), ("RUN", 1, 2, 0)], []),
        (
            [("runProject", 0), ("playgroundData", 2), ("projectEnd", 3), ("blockMoved", 20)],
            [("RUN", 0, 3, 1), ("CODE", 3, 4, 0)],
            [("POST_RUN_PAUSE", 2, 17)],
        ),
        (
            [("runProject", 0), ("projectEnd", 3), ("playgroundData", 6), ("menuOpen", 10)],  # menu counts
            [("RUN", 0, 2, 0)],
            [("POST_RUN_PAUSE", 1, 7)],
        ),
        (
            [("runProject", 0), ("projectEnd", 3), ("blockMoved", 8)],  # 5 s is not a pause
            [("RUN", 0, 2, 0), ("CODE", 2, 3, 0)],
            [],
        ),
        ([("runProject", 0), ("projectEnd", 3)], [("RUN", 0, 2, 0)], []),  # run was the last thing
        (
            [("runProject", 0), ("blockMoved", 20)],  # did not close cleanly
            [("RUN", 0, 1, 0), ("CODE", 1, 2, 0)],
            [],
        ),
        (
            [("runProject", 0), ("playgroundData", 400), ("projectEnd", 401)],  # inactive pause cuts a RUN
            [("RUN", 0, 1, 0)],
            [("INACTIVE_PAUSE", 0, 400)],
        ),
    ],
)
def test_segmentation_cases(events: list, episodes: list, pauses: list) -> None:
    got_episodes, got_pauses = segment(events)
    assert got_episodes == episodes
    assert got_pauses == pauses


def test_open_episode_survives_a_json_round_trip() -> None:
    config = EngineConfig()
    seg = Segmenter(config)
    seg.feed("runProject", 0)
    seg.feed("playgroundData", 1)
    copy = Segmenter.from_json(seg.to_json(), config)
    assert copy.run_open
    assert [(e.type.value, e.end_idx) for e in copy.feed("projectEnd", 2) if isinstance(e, Episode)] == [("RUN", 3)]
