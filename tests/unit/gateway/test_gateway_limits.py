"""Pure parts of the gateway's limits: stream slots, the question rate limit,
token lifetimes, board tokens and the secrets check."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import SecretStr

from delivery.gateway import tokens
from delivery.gateway.app import ConfigurationError, build_app
from delivery.gateway.caps import QuestionLimiter, StreamsFull, StreamSlots
from topology.settings import load_settings

SECRET = b"unit-secret-0123456789abcdef-0123456789"
ADMIN = b"unit-admin-0123456789abcdef-0123456789"
NOW = 1_800_000_000.0
DAY = 86400.0


class FakeStream:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_a_key_at_its_cap_loses_its_oldest_stream() -> None:
    evicted: list[str] = []
    slots = StreamSlots(per_key=2, total=10, on_evict=lambda slot: evicted.append(slot.key))
    first, second = slots.take("alice"), slots.take("alice")
    streams = [FakeStream(), FakeStream()]
    first.attach(streams[0])  # type: ignore[arg-type]
    second.attach(streams[1])  # type: ignore[arg-type]
    third = slots.take("alice")
    assert first.evicted and streams[0].closed and evicted == ["alice"]
    assert not second.evicted and not streams[1].closed and not third.evicted
    assert slots.held("alice") == 2 and len(slots) == 2
    slots.give_back(first)  # the evicted stream's handler ends later: nothing counted twice
    assert len(slots) == 2
    late = FakeStream()
    fourth = slots.take("alice")
    assert second.evicted
    second.attach(late)  # type: ignore[arg-type]  # evicted before its stream attached
    assert late.closed and not fourth.evicted


def test_a_full_process_refuses_others_but_lets_a_key_replace_its_own() -> None:
    slots = StreamSlots(per_key=2, total=3)
    a1, _a2, b1 = slots.take("a"), slots.take("a"), slots.take("b")
    with pytest.raises(StreamsFull):
        slots.take("c")
    replacement = slots.take("a")  # a's oldest makes room
    assert a1.evicted and not replacement.evicted and len(slots) == 3
    slots.give_back(b1)
    slots.give_back(b1)
    assert len(slots) == 2 and slots.held("b") == 0
    slots.take("c")
    with pytest.raises(ValueError):
        StreamSlots(per_key=0, total=1)


async def test_question_rate_limit_per_student_with_retry_after() -> None:
    limiter = QuestionLimiter("3/minute")
    assert [await limiter.take("alice") for _ in range(3)] == [None, None, None]
    wait = await limiter.take("alice")
    assert wait is not None and 1 <= wait <= 60
    assert await limiter.take("bob") is None  # per student
    again = await limiter.take("alice")
    assert again is not None  # a refused question consumed nothing, and is refused again


async def test_question_rate_limit_windows_all_apply_and_slide() -> None:
    limiter = QuestionLimiter("2/second;3/hour")
    assert await limiter.take("s") is None and await limiter.take("s") is None
    assert await limiter.take("s") is not None  # the one-second window
    await asyncio.sleep(1.1)
    assert await limiter.take("s") is None
    await asyncio.sleep(1.1)
    wait = await limiter.take("s")  # the hour window: 3 taken
    assert wait is not None and wait > 3000


def test_token_lifetime_is_capped_at_signing_and_at_verification() -> None:
    with pytest.raises(ValueError, match="TOKEN_MAX_TTL_S"):
        tokens.issue(SECRET, "alice", ttl_s=8 * DAY, now=NOW, max_ttl_s=7 * DAY)
    long_lived = tokens.issue(SECRET, "alice", ttl_s=30 * DAY, now=NOW)  # signed without the cap
    with pytest.raises(tokens.TokenError) as err:
        tokens.verify(SECRET, long_lived, now=NOW + 25 * DAY, max_ttl_s=7 * DAY)
    assert err.value.problem is tokens.TokenProblem.TOO_LONG_LIVED  # even with 5 days left
    ok = tokens.issue(SECRET, "alice", ttl_s=7 * DAY, now=NOW, max_ttl_s=7 * DAY)
    assert tokens.verify(SECRET, ok, now=NOW + 1, max_ttl_s=7 * DAY).student_key == "alice"


def test_a_token_without_iat_may_have_at_most_the_maximum_left() -> None:
    legacy = tokens._sign(SECRET, tokens.VERSION, {"s": "alice", "exp": int(NOW + 10 * DAY)})
    with pytest.raises(tokens.TokenError) as err:
        tokens.verify(SECRET, legacy, now=NOW, max_ttl_s=7 * DAY)
    assert err.value.problem is tokens.TokenProblem.TOO_LONG_LIVED
    assert tokens.verify(SECRET, legacy, now=NOW + 4 * DAY, max_ttl_s=7 * DAY).student_key == "alice"


def test_board_tokens_are_their_own_kind() -> None:
    board = tokens.issue_board(ADMIN, ttl_s=120, now=NOW)
    assert board.startswith("b1.")
    claims = tokens.verify_board(ADMIN, board, now=NOW + 119, max_ttl_s=120)
    assert claims.expires_at == int(NOW + 120) and claims.nonce
    assert (
        tokens.verify_board(ADMIN, tokens.issue_board(ADMIN, ttl_s=120, now=NOW), now=NOW, max_ttl_s=120).nonce
        != claims.nonce
    )
    student = tokens.issue(SECRET, "alice", ttl_s=60, now=NOW)
    relabelled = "b1." + student.split(".", 1)[1]
    problems = {}
    for name, token, check in (
        ("student as board", student, lambda t: tokens.verify_board(ADMIN, t, now=NOW, max_ttl_s=120)),
        ("relabelled", relabelled, lambda t: tokens.verify_board(ADMIN, t, now=NOW, max_ttl_s=120)),
        ("board as student", board, lambda t: tokens.verify(SECRET, t, now=NOW)),
        ("expired", board, lambda t: tokens.verify_board(ADMIN, t, now=NOW + 120, max_ttl_s=120)),
        ("other admin", board, lambda t: tokens.verify_board(ADMIN + b"x", t, now=NOW, max_ttl_s=120)),
        (
            "too long",
            tokens.issue_board(ADMIN, ttl_s=600, now=NOW),
            lambda t: tokens.verify_board(ADMIN, t, now=NOW, max_ttl_s=120),
        ),
    ):
        with pytest.raises(tokens.TokenError) as err:
            check(token)
        problems[name] = err.value.problem
    assert problems == {
        "student as board": tokens.TokenProblem.MALFORMED,
        "relabelled": tokens.TokenProblem.BAD_SIGNATURE,
        "board as student": tokens.TokenProblem.MALFORMED,
        "expired": tokens.TokenProblem.EXPIRED,
        "other admin": tokens.TokenProblem.BAD_SIGNATURE,
        "too long": tokens.TokenProblem.TOO_LONG_LIVED,
    }


@pytest.mark.parametrize(
    ("secret", "admin", "fragment"),
    [
        (None, "a" * 32, "TOKEN_SECRET is not set"),
        ("s" * 31, "a" * 32, "TOKEN_SECRET is 31 bytes long"),
        ("s" * 32, "ab", "ADMIN_TOKEN is 2 bytes long"),
        ("  ", "a" * 40, "TOKEN_SECRET is not set"),
    ],
)
def test_short_or_missing_secrets_are_refused_with_how_to_make_one(
    secret: str | None, admin: str, fragment: str
) -> None:
    settings = load_settings().model_copy(
        update={"token_secret": SecretStr(secret) if secret is not None else None, "admin_token": SecretStr(admin)}
    )
    with pytest.raises(ConfigurationError) as err:
        build_app(settings, with_clients=False)
    assert fragment in str(err.value)
    assert "secrets.token_urlsafe(32)" in str(err.value)


def test_32_byte_secrets_start_the_gateway() -> None:
    settings = load_settings().model_copy(
        update={"token_secret": SecretStr("é" * 16), "admin_token": SecretStr("a" * 32)}
    )  # 32 bytes in UTF-8
    app = build_app(settings, with_clients=False)
    assert app is not None
    assert tokens.weak_secret("X", "a" * 32) is None and tokens.weak_secret("X", b"a" * 31)


def test_rate_limit_setting_is_validated() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="QUESTION_RATE_LIMIT"):
        load_settings(question_rate_limit="often")
    assert load_settings(question_rate_limit="1/second").question_rate_limit == "1/second"
