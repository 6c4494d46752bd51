"""Dead letters always fit their topic: whole when they fit, else the first
64 KiB with the whole original's length and SHA-256."""

from __future__ import annotations

import base64
import hashlib

import orjson

from streams.deadletters import KEEP_BYTES, fitted, original_bytes, truncated
from topology.schemas import DeadLetter, RejectReason
from topology.schemas.base import encode


def letter(original: bytes) -> DeadLetter:
    try:
        text, enc = original.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        text, enc = base64.b64encode(original).decode(), "base64"
    return DeadLetter(
        reason=RejectReason.TOO_LARGE,
        detail="d" * 10_000,
        stage="ingest",
        original=text,
        original_encoding=enc,
        dead_lettered_at=0.0,
    )  # type: ignore[arg-type]


def test_a_record_that_fits_is_kept_whole() -> None:
    record = letter(b"x" * 200_000)
    data = encode(record)
    assert fitted(record, data, 1_000_000) is data


def test_an_oversize_record_keeps_its_head_length_and_digest() -> None:
    line = ('"\\' * 400_000).encode()  # escaping doubles it on the topic
    record = letter(line)
    data = fitted(record, encode(record), 1_000_000)
    assert len(data) <= 1_000_000
    out = orjson.loads(data)
    assert out["original_truncated"] is True
    assert out["original_length"] == len(line)
    assert out["original_sha256"] == hashlib.sha256(line).hexdigest()
    assert out["original"].encode() == line[:KEEP_BYTES]
    assert len(out["detail"]) <= 4096


def test_the_cut_never_splits_a_character() -> None:
    line = "é".encode() * 100_000  # two bytes each: 64 KiB falls inside one when offset by one
    cut = truncated(letter(b"a" + line))
    assert cut.original_encoding == "utf-8"
    assert len(cut.original.encode()) in (KEEP_BYTES, KEEP_BYTES - 1)


def test_binary_originals_stay_base64_and_hash_the_bytes() -> None:
    blob = bytes(range(256)) * 1000
    cut = truncated(letter(blob))
    assert cut.original_sha256 == hashlib.sha256(blob).hexdigest() and cut.original_length == len(blob)
    assert original_bytes(cut) == blob[: len(original_bytes(cut))]
