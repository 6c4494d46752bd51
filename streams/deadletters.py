"""Dead letters that always fit on their topic.

Pure.  A dead letter keeps its original bytes whole when the record fits
under the topic's record limit; otherwise it keeps the first
:data:`KEEP_BYTES` (cut on a character boundary), the whole original's
length and its SHA-256, so the record always fits and the original can
still be matched against its source.
"""

from __future__ import annotations

import base64
import hashlib

from topology.schemas import DeadLetter
from topology.schemas.base import encode

#: How much of an oversize original a dead letter keeps.
KEEP_BYTES = 65_536
#: How much of an oversize detail a dead letter keeps (characters).
KEEP_DETAIL = 4096


def original_text(data: bytes | None) -> tuple[str, str]:
    """Bytes as (text, encoding): UTF-8 when they decode, else base64."""
    raw = data or b""
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return base64.b64encode(raw).decode("ascii"), "base64"


def original_bytes(record: DeadLetter) -> bytes:
    """The bytes ``record.original`` stands for."""
    if record.original_encoding == "base64":
        return base64.b64decode(record.original)
    return record.original.encode("utf-8", "surrogatepass")


def _head(data: bytes, keep: int) -> bytes:
    """The first ``keep`` bytes, shortened so no UTF-8 sequence is cut in two."""
    head = data[:keep]
    for cut in range(min(4, len(head))):
        try:
            (head[:-cut] if cut else head).decode("utf-8")
        except UnicodeDecodeError:
            continue
        return head[:-cut] if cut else head
    return head


def truncated(record: DeadLetter, keep: int = KEEP_BYTES) -> DeadLetter:
    """``record`` keeping the first ``keep`` bytes of its original, with the
    whole original's length and SHA-256."""
    whole = original_bytes(record)
    text, encoding = original_text(_head(whole, keep))
    return record.model_copy(
        update={
            "original": text,
            "original_encoding": encoding,
            "original_truncated": True,
            "original_length": len(whole),
            "original_sha256": hashlib.sha256(whole).hexdigest(),
            "detail": record.detail[:KEEP_DETAIL],
        }
    )


def fitted(record: DeadLetter, data: bytes, max_bytes: int) -> bytes:
    """The encoded record ``data`` if it fits in ``max_bytes``, else the
    encoding of its truncated form."""
    if len(data) <= max_bytes:
        return data
    return encode(truncated(record))
