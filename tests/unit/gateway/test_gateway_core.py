"""Pure parts of the gateway: tokens, frames and their parser, the hub, the cursor."""

from __future__ import annotations

import asyncio

import pytest

from delivery.gateway import sse, tokens
from delivery.gateway.client import SseParser
from delivery.gateway.pubsub import Hub
from delivery.gateway.student import Delivered

SECRET = b"unit-secret-0123456789abcdef-0123456789"
NOW = 1_800_000_000.0


def test_token_round_trip_and_canonical_key() -> None:
    token = tokens.issue(SECRET, "  Alice ", ttl_s=60, now=NOW)
    assert token.startswith("v1.") and all(c not in token for c in "+/=")
    claims = tokens.verify(SECRET, token, now=NOW + 59)
    assert claims == tokens.StudentClaims("alice", int(NOW + 60))


@pytest.mark.parametrize(
    ("token", "problem"),
    [
        (None, tokens.TokenProblem.MISSING),
        ("", tokens.TokenProblem.MISSING),
        ("abc", tokens.TokenProblem.MALFORMED),
        ("v2.a.b", tokens.TokenProblem.MALFORMED),
        ("v1.a.b.c", tokens.TokenProblem.MALFORMED),
        ("v1." + "a" * 2000 + ".b", tokens.TokenProblem.MALFORMED),
    ],
)
def test_malformed_tokens(token: str | None, problem: tokens.TokenProblem) -> None:
    with pytest.raises(tokens.TokenError) as err:
        tokens.verify(SECRET, token, now=NOW)
    assert err.value.problem is problem


def test_tampered_expired_and_foreign_tokens() -> None:
    token = tokens.issue(SECRET, "alice", ttl_s=60, now=NOW)
    version, payload, signature = token.split(".")
    forged_payload = tokens.issue(b"other", "bob", ttl_s=60, now=NOW).split(".")[1]
    for bad in (
        f"{version}.{forged_payload}.{signature}",
        tokens.issue(b"other", "alice", ttl_s=60, now=NOW),
        f"{version}.{payload}.{signature[:-2]}AA",
    ):
        with pytest.raises(tokens.TokenError) as err:
            tokens.verify(SECRET, bad, now=NOW)
        assert err.value.problem is tokens.TokenProblem.BAD_SIGNATURE
    with pytest.raises(tokens.TokenError) as err:
        tokens.verify(SECRET, token, now=NOW + 60)
    assert err.value.problem is tokens.TokenProblem.EXPIRED


def test_issue_refuses_nonsense_and_ttl_parsing() -> None:
    for secret, who, ttl in ((b"", "a", 1), (SECRET, "  ", 1), (SECRET, "a", 0)):
        with pytest.raises(ValueError):
            tokens.issue(secret, who, ttl_s=ttl, now=NOW)
    assert tokens.parse_ttl("12h") == 43200 and tokens.parse_ttl("90") == 90
    assert tokens.parse_ttl("30m") == 1800 and tokens.parse_ttl("7d") == 7 * 86400
    for bad in ("", "0", "-1h", "12y", "h"):
        with pytest.raises(ValueError):
            tokens.parse_ttl(bad)


def test_frames_parse_back() -> None:
    parser = SseParser()
    wire = (
        sse.retry(2000)
        + sse.comment("ping")
        + sse.frame('{"a":1}', event="assistant_message", event_id=7)
        + sse.frame("two\nlines", event="ready")
        + sse.frame("x", event_id=9)
    )
    got = [e for e in parser.feed(wire) if e.comment is None and e.retry is None]
    assert [(e.event, e.data, e.id) for e in got] == [
        ("assistant_message", '{"a":1}', "7"),
        ("ready", "two\nlines", None),
        ("message", "x", "9"),
    ]
    assert parser.retry_ms == 2000 and parser.last_event_id == "9"
    with pytest.raises(ValueError):
        sse.frame("x", event="a\nb")


async def test_hub_fans_out_per_key_and_drops_slow_subscribers() -> None:
    dropped: list[str] = []
    hub: Hub[int] = Hub(2, on_drop=lambda sub: dropped.append(sub.label))
    fast, slow, other = hub.subscribe("a", "fast"), hub.subscribe("a", "slow"), hub.subscribe("b")
    closed: list[bool] = []
    slow.on_drop = lambda: closed.append(True)
    assert hub.publish("a", 1) == 2
    assert fast.queue.get_nowait() == 1
    assert hub.publish("a", 2) == 2 and fast.queue.get_nowait() == 2
    assert hub.publish("a", 3) == 1  # slow holds 2 items: dropped, not blocked
    assert dropped == ["slow"] and closed == [True] and slow.is_dropped
    assert slow.queue.get_nowait() is None  # woken, waiting items discarded
    assert other.queue.empty() and hub.count("a") == 1 and hub.count() == 2
    hub.unsubscribe(fast)
    hub.unsubscribe(fast)
    assert hub.count("a") == 0
    other.interrupt()
    assert await asyncio.wait_for(other.queue.get(), 1) is None


def test_delivered_keeps_the_cursor_monotonic() -> None:
    seen = Delivered(10)
    assert seen.seen(10) and seen.seen(3) and not seen.seen(11)
    assert seen.add(12) == 12
    assert not seen.seen(11)
    assert seen.add(11) == 12  # a late, lower id repeats the cursor
    assert seen.seen(11) and seen.seen(12)
    fresh = Delivered(None)
    assert not fresh.seen(0) and fresh.add(5) == 5
    for i in range(6, 5000):
        fresh.add(i)
    assert fresh.seen(6) and len(fresh.ids) <= 4096
