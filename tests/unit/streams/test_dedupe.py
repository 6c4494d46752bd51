"""The duplicate-id check shared by the worker's ingest and the in-process replay:
the first accepted copy of an id wins, the record that carried it may be read
again (a re-delivery), and a deferred screen rejection of an accepted id is a
duplicate (duplicates rank first)."""

from __future__ import annotations

import pytest

from streams.dedupe import Verdict, check, duplicate_of, remember, window_of
from streams.ingest import Rejected, SeenIds, decode_line
from streams.screen import FIELD_MAX_CHARS
from topology.schemas import NormalizedEvent, RejectReason

TS = 1_778_058_847.0


def event(event_id: str = "7", student: str = "alice") -> NormalizedEvent:
    return NormalizedEvent(
        event_id=event_id,
        envelope_id_int=None,
        student_key=student,
        student_id=student,
        session_id="s1",
        event_type="blockChanged",
        ts=TS,
        timestamp="2026-05-06T09:14:07Z",
        workspace_status="ok",
    )


def screened(event_id: str | None = "7", student: str | None = "alice", *, deferred: bool = True) -> Rejected:
    return Rejected(RejectReason.BAD_FIELD, "bad", event_id, student, "s1", deferred=deferred)


def window(**accepted: int) -> SeenIds:
    """Accepted ids (keyword ``i7=3``: id ``"7"`` accepted at raw offset 3)."""
    seen = SeenIds()
    for name, offset in accepted.items():
        seen.add(name.removeprefix("i"), offset)
    return seen


# (line, accepted ids, raw offset of the line, verdict)
CASES: dict[str, tuple[NormalizedEvent | Rejected, SeenIds | None, int | None, Verdict]] = {
    "a new id": (event(), window(i1=0), 5, Verdict.ACCEPT),
    "no window yet": (event(), None, 5, Verdict.ACCEPT),
    "an accepted id from another record": (event(), window(i7=2), 5, Verdict.DUPLICATE),
    "an accepted id from this very record": (event(), window(i7=5), 5, Verdict.REDELIVERY),
    "an accepted id, offset unknown (a file)": (event(), window(i7=-1), None, Verdict.DUPLICATE),
    "an id accepted from a file, then an offset": (event(), window(i7=-1), 4, Verdict.DUPLICATE),
    "a content-hash id is never a duplicate": (event("h:abc"), window(**{"ih:abc": 5}), 9, Verdict.ACCEPT),
    "a deferred rejection of an accepted id": (screened(), window(i7=5), 9, Verdict.DUPLICATE),
    "a deferred rejection at the accepted offset is still a duplicate": (
        screened(),
        window(i7=5),
        5,
        Verdict.DUPLICATE,
    ),
    "a deferred rejection of a new id stands": (screened(), window(i1=0), 9, Verdict.ACCEPT),
    "a rejection that is not deferred stands": (screened(deferred=False), window(i7=5), 9, Verdict.ACCEPT),
    "a deferred rejection without an id stands": (screened(None), window(i7=5), 9, Verdict.ACCEPT),
    "a deferred rejection with a content-hash id stands": (
        screened("h:abc"),
        window(**{"ih:abc": 5}),
        9,
        Verdict.ACCEPT,
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_verdicts(name: str) -> None:
    line, seen, offset, verdict = CASES[name]
    assert check(line, seen, offset) is verdict


@pytest.mark.parametrize(
    ("line", "student"),
    [
        (event(), "alice"),
        (event("h:abc"), None),
        (screened(), "alice"),
        (screened(deferred=False), None),
        (screened(None), None),
        (screened(student=None), None),
        (screened(student="a" * (FIELD_MAX_CHARS + 1)), None),  # too long to be a key: never accepted
    ],
)
def test_window_of(line: NormalizedEvent | Rejected, student: str | None) -> None:
    assert window_of(line) == student


def test_remember_keeps_the_offset_and_skips_content_hash_ids() -> None:
    seen = SeenIds()
    assert remember(seen, event("7"), 3) and seen.accepted_at("7") == 3
    assert remember(seen, event("8")) and seen.accepted_at("8") == -1
    assert not remember(seen, event("h:abc"), 4) and not seen.seen("h:abc")


def test_the_first_copy_wins_and_its_record_may_come_again() -> None:
    seen = SeenIds()
    lines = [(event("1"), 0), (event("2"), 1), (event("1"), 2), (event("1"), 0), (event("2"), 1)]
    verdicts = []
    for line, offset in lines:
        verdict = check(line, seen, offset)
        if verdict is Verdict.ACCEPT:
            remember(seen, line, offset)
        verdicts.append(verdict)
    assert verdicts == [Verdict.ACCEPT, Verdict.ACCEPT, Verdict.DUPLICATE, Verdict.REDELIVERY, Verdict.REDELIVERY]


def test_the_duplicate_rejection_names_the_id_student_and_session() -> None:
    for line in (event(), screened()):
        rejected = duplicate_of(line)
        assert rejected.reason is RejectReason.DUPLICATE_ID and not rejected.deferred
        assert (rejected.event_id, rejected.student_key, rejected.session_id) == ("7", "alice", "s1")
        assert rejected.detail == "envelope id 7 was already accepted for this student"


def test_a_decoded_line_goes_through_the_check() -> None:
    line = (
        b'{"id": 7, "raw_message": "{\\"studentID\\": \\"Alice\\", \\"sessionID\\": \\"s1\\", '
        b'\\"timestamp\\": \\"2026-05-06T09:14:07Z\\", \\"eventType\\": \\"blockChanged\\"}"}'
    )
    out = decode_line(line)
    assert isinstance(out, NormalizedEvent) and window_of(out) == "alice"
    assert check(out, window(i7=0), 1) is Verdict.DUPLICATE
