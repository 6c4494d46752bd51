"""Reply length enforcement and the sentence splitter."""

from __future__ import annotations

import pytest

from feedback.length import enforce_length, split_sentences, word_count


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("One. Two. Three.", ["One.", "Two.", "Three."]),
        ("Use a turn, e.g. 90 degrees. Then run.", ["Use a turn, e.g. 90 degrees.", "Then run."]),
        ("That is, i.e. The arm.", ["That is, i.e. The arm."]),
        ("Ask Mr. Lee. He knows.", ["Ask Mr. Lee.", "He knows."]),
        ("Set it to 2.5 seconds. Run.", ["Set it to 2.5 seconds.", "Run."]),
        ("Wait... then turn. Go.", ["Wait... then turn.", "Go."]),
        ("Wait... Then turn.", ["Wait...", "Then turn."]),
        ("Wait… then turn.", ["Wait… then turn."]),
        ("Wheels, arms, etc. all matter.", ["Wheels, arms, etc. all matter."]),
        ("Wheels, arms, etc. Then run.", ["Wheels, arms, etc.", "Then run."]),
        ("Great! now turn.", ["Great!", "now turn."]),
        ("Why? Because.", ["Why?", "Because."]),
        ("Use 300 mm. then turn.", ["Use 300 mm. then turn."]),
        ('He said "stop." Then go.', ['He said "stop."', "Then go."]),
        ("Try `drive for`. `turn for` next.", ["Try `drive for`.", "`turn for` next."]),
        ("No trailing punctuation", ["No trailing punctuation"]),
        ("", []),
    ],
)
def test_split_sentences(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


def words(n: int, word: str = "go") -> str:
    return " ".join([word] * n)


def sentence(n: int) -> str:
    """A capitalized sentence body of ``n`` words (no final punctuation)."""
    return "Go " + words(n - 1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # praise plus its hint: both kept
        ("Great job! Now try turning left with `turn for`.", "Great job! Now try turning left with `turn for`."),
        # a third sentence is dropped
        ("One step. Two steps. Three steps.", "One step. Two steps."),
        # a second sentence that would pass 40 words is dropped
        (f"{sentence(20)}. {sentence(21)}.", f"{sentence(20)}."),
        (f"{sentence(20)}. {sentence(20)}.", f"{sentence(20)}. {sentence(20)}."),
        # a full stop before a lower-case word does not end a sentence
        (f"{words(20)}. {words(21)}.", f"{words(20)}. {words(20)}."),
        # a long single sentence within the limit is kept whole
        (f"{words(40)}.", f"{words(40)}."),
        # a runaway sentence is cut at the last clause break inside the limit
        (f"{words(10)}, {words(10)}; {words(30)}.", f"{words(10)}, {words(10)}."),
        # ... but never below six words: then at the limit
        (f"{words(3)}, {words(45)}.", f"{words(3)}, {words(37)}."),
        (f"{words(5)}, {words(45)}.", f"{words(5)}, {words(35)}."),
        (f"{words(6)}, {words(45)}.", f"{words(6)}."),
        # a dash is a clause break too
        (f"{words(12)} — {words(40)}.", f"{words(12)}."),
        # punctuation added, dangling clause marks removed
        ("try the arm", "try the arm."),
        ("Try the arm,", "Try the arm."),
        ("Is it done?", "Is it done?"),
        ("Use `stop driving`", "Use `stop driving`."),
        ("  spaced   out\ntext ", "spaced out text."),
        ("", ""),
        (None, ""),
    ],
)
def test_enforce_length(text: str | None, expected: str) -> None:
    assert enforce_length(text) == expected


def test_cut_never_splits_a_block_name() -> None:
    text = words(38) + " `set drive velocity to` 50 percent now"
    out = enforce_length(text)
    assert out == words(38) + "."
    assert out.count("`") % 2 == 0


def test_clause_break_inside_a_block_name_is_ignored() -> None:
    text = words(8) + ", " + words(28) + " `a, b` " + words(10)
    assert enforce_length(text) == words(8) + "."


def test_limits_are_parameters() -> None:
    assert enforce_length("A b c. D e f.", max_sentences=1) == "A b c."
    assert enforce_length(words(12), max_words=10, min_clause_words=3) == words(10) + "."


@pytest.mark.parametrize(
    "text",
    [
        "Great job! Now try turning left.",
        f"{words(50)}.",
        f"{words(10)}, {words(40)}",
        "Hmm... the robot stops early. Try a bigger distance.",
        "Use e.g. 45 degrees. Then run.",
    ],
)
def test_idempotent(text: str) -> None:
    once = enforce_length(text)
    assert enforce_length(once) == once
    assert word_count(once) <= 40
