"""The duplicate-id check (``duplicate_id``): the first accepted copy of an envelope id wins.

Pure and deterministic; the worker's ingest (:mod:`streams.agents.ingest`)
and the in-process replay (:mod:`streams.local`) both call it, each with its
own memory of accepted ids per student (:class:`~streams.ingest.SeenIds`).

* An accepted event's id is remembered with the raw offset that carried it
  (:func:`remember`); ids of rejected lines never are.
* An event whose id was accepted before is a **duplicate** — unless the raw
  offset is the one that carried the accepted copy: that is a **re-delivery**
  of the same record (the worker restarted before committing), passed on
  again so its outputs are re-published; the analysis drops it by its raw offset.
* A hostile-line screen rejection is *deferred* (:attr:`Rejected.deferred`):
  ``duplicate_id`` ranks before it, so a deferred rejection of an id already
  accepted is a duplicate too (whatever the offset).
* Content-hash ids (``h:``, lines without a usable id) are never remembered
  and never duplicates.
"""

from __future__ import annotations

from enum import StrEnum

from streams.ingest import Rejected, SeenIds
from streams.screen import bounded
from topology.schemas import NormalizedEvent, RejectReason


class Verdict(StrEnum):
    """What the envelope id says about a line."""

    ACCEPT = "accept"
    """Not a duplicate: an event is accepted (and :func:`remember` ed), a rejection stands."""
    REDELIVERY = "redelivery"
    """The record that carried the accepted copy, read again: pass it on, remember nothing."""
    DUPLICATE = "duplicate"
    """The id was accepted before: reject the line as ``duplicate_id`` (:func:`duplicate_of`)."""


def window_of(line: NormalizedEvent | Rejected) -> str | None:
    """The student whose accepted ids decide ``line``, or None when no id can make
    it a duplicate (a content-hash id, a rejection that is not deferred, no
    student key or one too long to be a key); then the check needs no window."""
    if isinstance(line, NormalizedEvent):
        return None if line.event_id.startswith("h:") else line.student_key
    if not line.deferred or line.event_id is None or line.event_id.startswith("h:"):
        return None
    return bounded(line.student_key)


def check(line: NormalizedEvent | Rejected, seen: SeenIds | None, offset: int | None = None) -> Verdict:
    """The verdict of ``line``'s envelope id against the student's accepted ids.

    :param seen: the ids accepted for the student of :func:`window_of` (None: none yet).
    :param offset: the raw offset that carried ``line`` (None: unknown, as in a file).
    """
    if seen is None or window_of(line) is None:
        return Verdict.ACCEPT
    event_id = line.event_id
    assert event_id is not None  # window_of() is None for a line without an id
    first = seen.accepted_at(event_id)
    if first is None:
        return Verdict.ACCEPT
    if isinstance(line, NormalizedEvent) and offset is not None and first == offset:
        return Verdict.REDELIVERY
    return Verdict.DUPLICATE


def remember(seen: SeenIds, event: NormalizedEvent, offset: int | None = None) -> bool:
    """Remember an accepted event's id (and its raw offset); False for a content-hash id."""
    if window_of(event) is None:
        return False
    seen.add(event.event_id, -1 if offset is None else offset)
    return True


def duplicate_of(line: NormalizedEvent | Rejected) -> Rejected:
    """The ``duplicate_id`` rejection of a line whose id was accepted before."""
    return Rejected(
        RejectReason.DUPLICATE_ID,
        f"envelope id {line.event_id} was already accepted for this student",
        line.event_id,
        line.student_key,
        line.session_id,
    )
