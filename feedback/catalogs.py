"""Playground catalogs: task text, available blocks, progress milestones, block names.

The data lives in JSON files under ``feedback/data`` (one file per playground,
plus ``default.json``).  Adding a playground means adding one file; no code
changes.  Invariants:

* a playground name is resolved through :func:`canonical_playground`, which
  folds spellings such as ``GOMars`` / ``GO-Mars`` / ``go_mars`` onto one
  canonical name; unknown names pass through (stripped) unchanged;
* a playground without its own entry gets the ``default`` task and block list,
  never another playground's;
* only playgrounds whose entry has a ``progress`` table have a progress
  measure (:func:`progress_spec` returns ``None`` for the others).

Everything is loaded once, read-only, and pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any

DEFAULT_PLAYGROUND = "default"
_DATA_PACKAGE = "feedback.data"
_BLOCK_NAMES_FILE = "block_names.json"


@dataclass(frozen=True, slots=True)
class Milestone:
    """One scored task of a playground.

    Done when any ``any_positive`` parameter is a number above zero, or any
    ``any_true`` parameter is exactly ``true``.
    """

    key: str
    label: str
    any_positive: tuple[str, ...] = ()
    any_true: tuple[str, ...] = ()

    def is_done(self, params: Mapping[str, Any]) -> bool:
        """Whether the playground parameters show this milestone as reached."""
        if any(params.get(name) is True for name in self.any_true):
            return True
        return any(_is_positive(params.get(name)) for name in self.any_positive)


@dataclass(frozen=True, slots=True)
class ProgressSpec:
    """How a playground's parameters turn into a progress percentage.

    ``score_param`` holds the playground's own score when it reports one;
    otherwise the number of finished milestones is the score.  Either way the
    score is capped at ``score_cap`` and scaled to 0..100.
    """

    milestones: tuple[Milestone, ...]
    score_param: str | None = None
    score_cap: int = 5

    def label(self, key: str) -> str:
        """The student-friendly label of milestone ``key`` (the key if unknown)."""
        return next((m.label for m in self.milestones if m.key == key), key)


@dataclass(frozen=True, slots=True)
class PlaygroundEntry:
    """Catalog entry of one playground."""

    playground: str
    aliases: tuple[str, ...]
    task: str
    blocks: tuple[str, ...]
    progress: ProgressSpec | None = None


def _is_positive(value: object) -> bool:
    if value is True:
        return True
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _fold(name: str) -> str:
    """Spelling-insensitive key: upper-cased letters and digits only."""
    return re.sub(r"[^0-9A-Z]", "", name.upper())


def _parse_progress(raw: Mapping[str, Any] | None) -> ProgressSpec | None:
    if not raw:
        return None
    milestones = tuple(
        Milestone(
            key=m["key"],
            label=m["label"],
            any_positive=tuple(m.get("any_positive", ())),
            any_true=tuple(m.get("any_true", ())),
        )
        for m in raw["milestones"]
    )
    return ProgressSpec(
        milestones=milestones,
        score_param=raw.get("score_param"),
        score_cap=int(raw.get("score_cap", 5)),
    )


def _parse_entry(raw: Mapping[str, Any]) -> PlaygroundEntry:
    return PlaygroundEntry(
        playground=raw["playground"],
        aliases=tuple(raw.get("aliases", ())),
        task=raw["task"],
        blocks=tuple(raw.get("blocks", ())),
        progress=_parse_progress(raw.get("progress")),
    )


@cache
def _entries() -> dict[str, PlaygroundEntry]:
    """Every catalog entry keyed by its canonical name (loaded once)."""
    out: dict[str, PlaygroundEntry] = {}
    for item in sorted(resources.files(_DATA_PACKAGE).iterdir(), key=lambda p: p.name):
        if item.name.endswith(".json") and item.name != _BLOCK_NAMES_FILE:
            entry = _parse_entry(json.loads(item.read_text(encoding="utf-8")))
            out[entry.playground] = entry
    if DEFAULT_PLAYGROUND not in out:
        raise RuntimeError("feedback catalog is missing its 'default' entry")
    return out


@cache
def _aliases() -> dict[str, str]:
    """Folded spelling → canonical name, for every named playground."""
    out: dict[str, str] = {}
    for name, entry in _entries().items():
        if name == DEFAULT_PLAYGROUND:
            continue
        for spelling in (name, *entry.aliases):
            out[_fold(spelling)] = name
    return out


@lru_cache(maxsize=1024)  # every event's playground goes through here; spellings are few
def canonical_playground(name: str | None) -> str | None:
    """The canonical playground name for a telemetry spelling.

    :param name: a raw playground string (``GOMars``, ``go_mars``, ``RoverRescue``…).
    :returns: the catalog's canonical name when a catalog entry matches the
        spelling (ignoring case and punctuation), else the stripped input;
        ``None`` for ``None`` or a blank string.
    """
    if name is None or not name.strip():
        return None
    stripped = name.strip()
    return _aliases().get(_fold(stripped), stripped)


def entry_for(playground: str | None) -> PlaygroundEntry:
    """The catalog entry of ``playground``, or the default entry."""
    canonical = canonical_playground(playground)
    entries = _entries()
    if canonical is None:
        return entries[DEFAULT_PLAYGROUND]
    return entries.get(canonical, entries[DEFAULT_PLAYGROUND])


def task_description(playground: str | None) -> str:
    """The task text for ``playground`` (the default task when it has none)."""
    return entry_for(playground).task


def available_blocks(playground: str | None) -> tuple[str, ...]:
    """The blocks the student can use on ``playground`` (empty for the default)."""
    return entry_for(playground).blocks


def progress_spec(playground: str | None) -> ProgressSpec | None:
    """The progress table of ``playground``; ``None`` when it has no progress measure."""
    canonical = canonical_playground(playground)
    if canonical is None or canonical == DEFAULT_PLAYGROUND:
        return None
    entry = _entries().get(canonical)
    return entry.progress if entry else None


def known_playgrounds() -> tuple[str, ...]:
    """Canonical names of every playground with its own entry (sorted)."""
    return tuple(sorted(n for n in _entries() if n != DEFAULT_PLAYGROUND))


@cache
def _block_names() -> dict[str, str]:
    text = resources.files(_DATA_PACKAGE).joinpath(_BLOCK_NAMES_FILE).read_text("utf-8")
    names: dict[str, str] = json.loads(text)
    return names


def block_name(block_type: str) -> str:
    """A short student-facing name for a Blockly block type.

    :returns: the friendly name (``pg_drivetrain_drive_for`` → ``drive for``),
        or the raw type when the type is not in the list.
    """
    return _block_names().get(block_type, block_type)
