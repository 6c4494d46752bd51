"""The reply sanitizer: a corpus of realistic bad outputs plus targeted rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feedback.length import enforce_length
from feedback.sanitize import clean_reply, sanitize

CORPUS_PATH = Path(__file__).resolve().parents[2] / "data" / "sanitizer_corpus.jsonl"
CORPUS: list[dict[str, Any]] = [
    json.loads(line) for line in CORPUS_PATH.read_text(encoding="utf-8").splitlines() if line.strip()
]


def test_corpus_is_large_and_well_formed() -> None:
    assert len(CORPUS) >= 60
    for case in CORPUS:
        assert set(case) == {"raw", "expected", "note"}
        assert all(isinstance(case[k], str) for k in case)
    assert len({c["raw"] for c in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("case", CORPUS, ids=[c["note"] for c in CORPUS])
def test_corpus_exact_output(case: dict[str, str]) -> None:
    assert clean_reply(case["raw"]) == case["expected"]


@pytest.mark.parametrize("case", CORPUS, ids=[c["note"] for c in CORPUS])
def test_corpus_idempotent(case: dict[str, str]) -> None:
    once = sanitize(case["raw"])
    assert sanitize(once) == once
    assert clean_reply(case["expected"]) == case["expected"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, ""),
        ("", ""),
        ("Encouragement: Keep trying.", "Keep trying."),
        ('"Keep trying."', "Keep trying."),
        ("Student, keep trying.", "Keep trying."),
        ("`Keep trying", "Keep trying"),  # a stray backtick before a sentence goes
        ("`drive for needs more", "`drive for needs more"),  # unclear: left alone
        ("It's the robot's turn", "It's the robot's turn"),
        ("<think>a</think>", ""),
        ("Use the `wait` block", "Use the `wait` block"),
        ("Let me know if you need help!", "Let me know if you need help!"),  # never emptied
        ("Drive Forward: use 300 mm.", "Drive Forward: use 300 mm."),
        ("drive for needs a bigger number", "Drive for needs a bigger number"),
    ],
)
def test_sanitize_rules(raw: str | None, expected: str) -> None:
    assert sanitize(raw) == expected


def test_block_names_keep_their_backticks_at_both_ends() -> None:
    text = "`drive for` goes first, then `stop driving`"
    assert sanitize(text) == text
    assert sanitize(f'"{text}."') == text + "."


def test_clean_reply_can_skip_length() -> None:
    long = "Try this. " * 10
    assert clean_reply(long, trim=False) == long.strip()
    assert clean_reply(long) == "Try this. Try this."


TOKENS = st.sampled_from(
    list("ab XY.,;:!?\"'`“”‘’*-#\n<>/()[]09")
    + [
        "<think>",
        "</think>",
        "Hint:",
        "Student,",
        "Here is a message for the student:",
        "e.g.",
        "...",
        "`drive for`",
        "🎉",
        "Let me know if you need help!",
        "Sure! ",
        "**",
        "- ",
        "1. ",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(TOKENS, max_size=30).map("".join))
def test_never_raises_and_is_idempotent(raw: str) -> None:
    once = sanitize(raw)
    assert sanitize(once) == once
    trimmed = enforce_length(once)
    assert enforce_length(trimmed) == trimmed
