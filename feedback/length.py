"""Reply length: at most two short sentences and forty words, keeping the hint.

Rules (applied to whitespace-normalized text):

* take the first sentence; if it alone is over the word limit, cut it at the
  last clause break (``,`` ``;`` ``:`` or a dash) inside the limit that keeps
  at least six words, else at the limit;
* otherwise also keep the second sentence when the total stays within the
  limit (so "Nice work! Now add a turn." keeps its hint);
* the result ends with sentence punctuation; a cut never splits a
  backticked block name.

The sentence splitter does not break after common abbreviations (``e.g.``,
``i.e.``, ``Mr.``…), inside decimals (``2.5``), after ``etc.`` or an ellipsis
followed by a lower-case word, or after a full stop followed by a lower-case
word.  Idempotent: ``enforce_length(enforce_length(x)) == enforce_length(x)``.
"""

from __future__ import annotations

import re

MAX_WORDS = 40
MAX_SENTENCES = 2
MIN_CLAUSE_WORDS = 6

_NEVER_END = frozenset(
    {
        "e.g.",
        "i.e.",
        "eg.",
        "ie.",
        "mr.",
        "mrs.",
        "ms.",
        "dr.",
        "vs.",
        "approx.",
        "st.",
        "cf.",
        "ca.",
        "no.",
        "nr.",
        "fig.",
    }
)
_END_PUNCT = re.compile(r"[.!?…]+[\"'”’)\]`]*$")
_CLOSERS = "\"'”’)]`"
_DASHES = frozenset({"-", "–", "—", "--"})
_CLAUSE_END = re.compile(r"([,;:]|[—–])$")


def _core(token: str) -> str:
    """The token without closing quotes or brackets."""
    return token.rstrip(_CLOSERS)


def _is_boundary(token: str, following: str) -> bool:
    """Whether a sentence ends after ``token`` given the next token."""
    if not _END_PUNCT.search(token):
        return False
    core = _core(token)
    if core.endswith(("!", "?")):
        return True
    starts_upper = following[:1].isupper() or following[:1] in "`\"“'‘([" or following[:1].isdigit()
    if core.endswith(("...", "…")) or core.lower() == "etc.":
        return following[:1].isupper()
    if core.lower() in _NEVER_END:
        return False
    return starts_upper


def split_sentences(text: str) -> list[str]:
    """Split normalized text into sentences (see the module rules)."""
    tokens = text.split()
    sentences: list[str] = []
    current: list[str] = []
    for idx, token in enumerate(tokens):
        current.append(token)
        following = tokens[idx + 1] if idx + 1 < len(tokens) else ""
        if following and _is_boundary(token, following):
            sentences.append(" ".join(current))
            current = []
    if current:
        sentences.append(" ".join(current))
    return sentences


def word_count(text: str) -> int:
    """Whitespace-separated words."""
    return len(text.split())


def _inside_code(words: list[str], upto: int) -> bool:
    """Whether a cut after ``words[upto - 1]`` would leave a backtick span open."""
    return sum(w.count("`") for w in words[:upto]) % 2 == 1


def _cut_point(words: list[str], limit: int, min_words: int) -> int:
    """How many words to keep from an over-long sentence."""
    for keep in range(min(limit, len(words)), min_words - 1, -1):
        word = words[keep - 1]
        is_break = word in _DASHES or bool(_CLAUSE_END.search(_core(word)))
        if is_break and not _inside_code(words, keep):
            return keep
    keep = min(limit, len(words))
    while keep > 1 and _inside_code(words, keep):
        keep -= 1
    return keep


def _finish(text: str) -> str:
    """Strip a dangling clause mark and make sure the text ends a sentence."""
    text = text.rstrip(" ,;:-–—")
    if not text:
        return ""
    return text if _END_PUNCT.search(text) else text + "."


def enforce_length(
    text: str | None,
    *,
    max_words: int = MAX_WORDS,
    max_sentences: int = MAX_SENTENCES,
    min_clause_words: int = MIN_CLAUSE_WORDS,
) -> str:
    """Trim a reply to ``max_sentences`` sentences and ``max_words`` words.

    :returns: the trimmed reply ending in sentence punctuation; ``""`` for
        empty input.
    """
    normalized = " ".join((text or "").split())
    if not normalized:
        return ""
    sentences = split_sentences(normalized)
    first_words = sentences[0].split()
    if len(first_words) > max_words:
        keep = _cut_point(first_words, max_words, min_clause_words)
        return _finish(" ".join(first_words[:keep]))
    kept = [sentences[0]]
    total = len(first_words)
    for sentence in sentences[1:max_sentences]:
        total += word_count(sentence)
        if total > max_words:
            break
        kept.append(sentence)
    return _finish(" ".join(kept))
