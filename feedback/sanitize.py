"""Clean a model's reply so the student sees only the message.

Small local models wrap their answer in reasoning tags, preambles ("Here is
a short message for the student:"), labels ("Hint:", "Student: Encouragement:"),
greetings, quotes, markdown and sign-offs.  :func:`sanitize` removes these,
conservatively:

* reasoning: a ``<think>…</think>`` block at the start is dropped; an
  unterminated one at the start empties the reply (it was cut off while
  thinking); otherwise text after the last ``</think>`` is kept (templates
  that open the tag themselves); chat-template tokens like ``<|eot_id|>`` go;
* markdown: code fences, bold/italic markers, headings and bullets go, and
  lines are joined; trailing meta lines (word counts, "Note: this message…")
  and emoji are dropped;
* preambles about the message itself go, optionally after "Sure!"/"Okay,";
* labels go only when they are known label words (speaker names, message
  words, feedback-type names), any number of them stacked; an ordinary
  prefix such as ``Drive Forward: use 300 mm.`` is kept;
* a greeting or "student" vocative at the start goes;
* quotes wrapping the whole reply or a whole sentence go, a dangling quote at
  either end goes; backticked block names are never touched, at the start or
  the end;
* sign-offs that offer more help ("Let me know if…", "Hope this helps!") go;
  encouragement such as "Good luck!" stays;
* the first letter is upper-cased unless the reply starts with a block name.

Pure, never raises, and idempotent: ``sanitize(sanitize(x)) == sanitize(x)``.
"""

from __future__ import annotations

import re

from feedback.classes import SPECS
from feedback.length import enforce_length

_TAGS = r"(?:think|thinking|reasoning)"
_THINK_BLOCK = re.compile(rf"^\s*<{_TAGS}>.*?</{_TAGS}>", re.S | re.I)
_THINK_OPEN = re.compile(rf"^\s*<{_TAGS}>", re.I)
_THINK_CLOSE = re.compile(rf"</{_TAGS}>", re.I)
_SPECIAL_TOKEN = re.compile(r"<\|[a-z_]+\|>|</?s>", re.I)

_HEADING_LINE = re.compile(r"^\s*#{1,6}\s+\S.*$")
_SPEAKER_LINE = re.compile(r"^\s*(?:assistant|coach|tutor|ai|bot)\s*:", re.I)
_FENCE = re.compile(r"^\s*```[a-z]*\s*$", re.I | re.M)
_BOLD = re.compile(r"(\*\*|__)(.+?)\1")
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)([^*\n]+?)(?<!\s)\*(?![\w*])")
_HEADING = re.compile(r"^\s*#{1,6}\s+", re.M)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+", re.M)
_META_LINE = re.compile(
    r"^\s*(?:\(?\s*(?:word count|words?)\s*[:=]?\s*\d+\s*\)?"
    r"|\(?\d+\s+words\)?"
    r"|(?:note|explanation|rationale|feedback types?( used)?)\s*:.*"
    r"|\(?(?:this|the above) (?:message|hint|response|reply|feedback)\b.*"
    r"|\(?i (?:chose|used|kept|focused)\b.*)$",
    re.I,
)
_EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\ufe0f\u200d\u2300-\u23ff]")

_INTERJECTION = r"(?:(?:sure|okay|ok|of course|certainly|absolutely|alright|all right|got it)[!,.]*\s+)"
_META_NOUN = (
    r"(?:message|hint|feedback|response|reply|nudge|note|suggestion|tip|answer|check-in|"
    r"version|output|text)"
)
_PREAMBLE = re.compile(
    rf"^{_INTERJECTION}*(?:"
    rf"(?:here(?:'s|’s| is| are)|below is)\b[^:\n]{{0,80}}?\b{_META_NOUN}s?\b"
    rf"[^:\n]{{0,50}}?\s*(?::|\s[-–—])\s*"
    rf"|here (?:you go|it is)\s*[:!.]\s*"
    rf"|(?:as (?:a|an|your) [^,:\n]{{1,40}}[,:]\s*)?(?:i would|i'd|i will|i'll) "
    rf"(?:say|tell|suggest|write)\b[^:\n]{{0,40}}:\s*"
    rf")",
    re.I,
)
_FILLER = re.compile(
    r"^(?:sure|of course|absolutely|certainly|okay|ok)[,!.]?\s+"
    r"i(?:'d| would)? (?:can |be happy to )?help(?: you)?(?: with (?:that|this))?[.!]+\s*",
    re.I,
)

_LABEL_WORDS = sorted(
    {
        "student",
        "assistant",
        "coach",
        "tutor",
        "ai",
        "bot",
        "agent",
        "feedback",
        "message",
        "response",
        "reply",
        "answer",
        "hint",
        "tip",
        "nudge",
        "note",
        "output",
        "suggestion",
        "encouragement",
        "praise",
        "reassurance",
        "check-in",
        "final answer",
        "final message",
        "feedback message",
        "short message",
        "student message",
        "message to student",
        "message for student",
        "message to the student",
        "message for the student",
        "response to student",
        "response to the student",
        "diagnose",
        "encourage testing",
        *(spec.prompt_name.lower() for spec in SPECS.values()),
    },
    key=len,
    reverse=True,
)
_LABEL = re.compile(
    r"^\[?(?:" + "|".join(re.escape(w) for w in _LABEL_WORDS) + r")\]?\s*(?::|\s[-–—]\s|\])\s*",
    re.I,
)
_VOCATIVE = re.compile(
    r"^(?:(?:hi|hey|hello|hiya)(?:\s+(?:there|student|friend|coder|buddy|everyone))?|student)"
    r"\s*[,!:.]\s*",
    re.I,
)
_TRAILING_VOCATIVE = re.compile(r",\s*(?:student|my friend|friend|buddy)(?=[.!?]|$)", re.I)
_SIGN_OFF = re.compile(
    r"(?:(?<=[.!?])|^)\s*(?:let me know\b|feel free to\b|i hope this helps|hope this helps|"
    r"if you (?:have|need) (?:any|more)\b|i'?m (?:here|happy) to help|just ask\b)[^.!?]*[.!?]*\s*$",
    re.I,
)

_MAX_PASSES = 8
_PAIRS = {'"': '"', "“": "”", "„": "“", "«": "»", "‘": "’", "'": "'"}
_SENTENCE_PUNCT = ".!?…"
_SENTENCE_ENDS = tuple(_SENTENCE_PUNCT)


def _strip_reasoning(text: str) -> str:
    while _THINK_BLOCK.match(text):
        text = _THINK_BLOCK.sub("", text, count=1)
    if _THINK_OPEN.match(text):
        return ""
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    return _SPECIAL_TOKEN.sub(" ", text)


def _strip_markdown(text: str) -> str:
    text = _FENCE.sub("", text)
    text = _BOLD.sub(r"\2", text)
    text = _ITALIC.sub(r"\1", text)
    return _BULLET.sub("", text)


_CLASS_NAMES = "|".join(
    re.escape(name) for name in sorted({spec.prompt_name for spec in SPECS.values()}, key=len, reverse=True)
)
_CLASS_LINE = re.compile(
    rf"^(?:feedback(?: types?| classes?)?|types?|classes?)\s*:\s*(?:{_CLASS_NAMES})"
    rf"(?:\s*(?:,|and|&|/|\+)\s*(?:{_CLASS_NAMES}))*\.?$",
    re.I,
)


def _drop_meta_lines(text: str) -> str:
    """Join the lines of the reply, leaving out the ones that talk about it."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    speakers = [i for i, line in enumerate(lines) if i and _SPEAKER_LINE.match(line)]
    if speakers:
        lines = lines[speakers[-1] :]
    if len(lines) > 1:
        lines = [line for line in lines if not _HEADING_LINE.match(line)] or lines
    lines = [_HEADING.sub("", line) for line in lines]
    while len(lines) > 1 and _META_LINE.match(lines[-1]):
        lines.pop()
    if len(lines) > 1 and _CLASS_LINE.match(lines[0]):
        lines.pop(0)
    if len(lines) > 1 and not _PREAMBLE.match(lines[0]) and _PREAMBLE.match(lines[0] + ":"):
        lines[0] += ":"  # a preamble alone on its line, without its colon
    return " ".join(lines)


def _is_apostrophe(text: str, idx: int) -> bool:
    before = text[idx - 1] if idx > 0 else ""
    after = text[idx + 1] if idx + 1 < len(text) else ""
    return before.isalnum() and after.isalnum()


def _quote_positions(text: str, char: str) -> list[int]:
    return [i for i, c in enumerate(text) if c == char and not (c in "'’" and _is_apostrophe(text, i))]


def _starts_sentence(text: str, idx: int) -> bool:
    before = text[:idx].rstrip()
    return idx == 0 or (text[idx - 1] == " " and before[-1:] in _SENTENCE_ENDS)


def _closing(text: str, idx: int, closer: str) -> int:
    """Position of the quote closing the one at ``idx`` (apostrophes skipped), or -1."""
    end = text.find(closer, idx + 1)
    while end >= 0 and closer in "'’" and _is_apostrophe(text, end):
        end = text.find(closer, end + 1)
    return end


def _ends_sentence(text: str, end: int) -> bool:
    """Whether the quote at ``end`` closes a sentence (``."`` or ``".`` at the end)."""
    after = text[end + 1 : end + 2]
    if end == len(text) - 1:
        return True
    if text[end - 1] in _SENTENCE_ENDS and after in ("", " "):
        return True
    return after in _SENTENCE_ENDS and end + 2 == len(text)


def _unwrap_sentences(text: str) -> str:
    """Remove quotes that wrap the whole reply or a whole sentence."""
    for opener, closer in _PAIRS.items():
        idx = text.find(opener)
        while idx >= 0:
            end = _closing(text, idx, closer)
            if (
                end > idx
                and _starts_sentence(text, idx)
                and _ends_sentence(text, end)
                and opener not in text[idx + 1 : end]
            ):
                text = text[:idx] + text[idx + 1 : end] + text[end + 1 :]
            idx = text.find(opener, idx + 1)
    return text


def _drop_dangling_quotes(text: str) -> str:
    """Remove an unmatched quote at either end (never a backtick pair)."""
    for opener, closer in _PAIRS.items():
        if opener == closer:
            positions = _quote_positions(text, opener)
            if len(positions) % 2 == 1:
                if positions[0] == 0:
                    text = text[1:]
                elif positions[-1] == len(text) - 1:
                    text = text[:-1]
        else:
            if text.startswith(opener) and closer not in text:
                text = text[1:]
            if text.endswith(closer) and opener not in text:
                text = text[:-1]
    return text


def _fix_backticks(text: str) -> str:
    """Unwrap a reply wrapped whole in backticks; drop a lone stray one at an end."""
    count = text.count("`")
    if count == 2 and text.startswith("`") and text.endswith("`"):
        inner = text[1:-1]
        if len(inner.split()) >= 4 or inner.rstrip()[-1:] in _SENTENCE_PUNCT:
            return inner.strip()
    if count % 2 == 1:
        if text.endswith("`") and text[-2:-1] in (*_SENTENCE_ENDS, " "):
            return text[:-1].rstrip()
        if text.startswith("`") and text[1:2].isupper() and text[1:].count("`") % 2 == 0:
            return text[1:].lstrip()
    return text


def _strip_leads(text: str) -> str:
    """One pass over the leading junk: preambles, labels, greetings, wrappers."""
    text = _PREAMBLE.sub("", text, count=1)
    text = _FILLER.sub("", text, count=1)
    text = _LABEL.sub("", text, count=1)
    text = _VOCATIVE.sub("", text, count=1)
    text = text.lstrip(" -–—:,")
    text = _unwrap_sentences(text)
    return _fix_backticks(text.strip())


def _strip_tail(text: str) -> str:
    """Drop a help-offering sign-off and a trailing vocative (never the whole reply)."""
    without = _SIGN_OFF.sub("", text).strip()
    text = without or text
    return _TRAILING_VOCATIVE.sub("", text)


def _capitalize(text: str) -> str:
    return text[:1].upper() + text[1:] if text[:1].isalpha() else text


def _clean_once(text: str) -> str:
    text = _strip_reasoning(text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _drop_meta_lines(_strip_markdown(text))
    text = " ".join(_EMOJI.sub(" ", text).split())
    previous = None
    while text != previous:
        previous = text
        text = _strip_leads(text)
        text = _drop_dangling_quotes(_strip_tail(text)).strip()
    return _capitalize(text)


def sanitize(text: str | None) -> str:
    """The student-facing message inside a model reply (see the module rules).

    :returns: the cleaned text; ``""`` for ``None``, empty input or a reply
        that was only reasoning.
    """
    if not text:
        return ""
    previous, text = None, text
    for _ in range(_MAX_PASSES):
        if text == previous:
            break
        previous, text = text, _clean_once(text)
    return text


def clean_reply(text: str | None, *, trim: bool = True) -> str:
    """Sanitize a model reply, then enforce the length rules unless ``trim`` is off."""
    cleaned = sanitize(text)
    return enforce_length(cleaned) if trim else cleaned
