"""Hostile input at the SSE gateway, with the outcome each must have.

- Tokens (pure): anything but a token exactly as the gateway signed it is a
  401 — non-ASCII, bytes appended, padding and trailing-bit variants, huge,
  empty, another MAC, expired, signed for too long.  Never a 500, never a pass.
- Connections (the real gateway on the real broker and PostgreSQL): a
  half-sent request head is closed after ``GATEWAY_REQUEST_TIMEOUT_S``, a
  trickled body gets 408; a student's streams beyond the per-token cap close
  the oldest; a full process answers 503 with Retry-After; question floods
  and piles of unanswered questions get 429 with Retry-After; the admin token
  in an address is refused; the page goes live while PostgreSQL is
  unreachable and gets its history once it is back; a question stored but
  never published is published again.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
import uuid
from typing import Any

import pytest
from aiokafka.errors import KafkaConnectionError
from hypothesis import given, settings
from hypothesis import strategies as st

from delivery.gateway import questions, state, tokens
from delivery.repo import requests as repo_requests
from tests.integration.test_gateway_sse import (
    ADMIN,
    SECRET,
    Kit,
    Stream,
    open_stream,
    running_gateway,
    student,
)
from topology import topics as T
from topology.kafka_admin import read_to_end
from topology.schemas.base import decode
from topology.schemas.feedback import ChatRequest
from topology.settings import Settings

KEY = SECRET.encode()
NOW = 1_800_000_000.0
P = tokens.TokenProblem
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


# --- tokens (pure) -----------------------------------------------------------------------


def _good() -> str:
    return tokens.issue(KEY, "alice", ttl_s=3600, now=NOW)


def _signed(payload: bytes, version: str = tokens.VERSION) -> str:
    part = f"{version}.{base64.urlsafe_b64encode(payload).rstrip(b'=').decode()}"
    return f"{part}.{tokens._b64(tokens._mac(KEY, part))}"


def _trailing_bits(token: str) -> str:
    """The same signature bytes written with non-zero padding bits (a lenient decoder's twin)."""
    head, sig = token.rsplit(".", 1)
    twin = sig[:-1] + _ALPHABET[_ALPHABET.index(sig[-1]) ^ 1]
    assert base64.urlsafe_b64decode(twin + "=") == base64.urlsafe_b64decode(sig + "=")
    return f"{head}.{twin}"


HOSTILE_TOKENS: dict[str, tuple[Any, P]] = {
    "empty": (lambda: "", P.MISSING),
    "dots only": (lambda: "..", P.MALFORMED),
    "empty parts": (lambda: "v1..", P.MALFORMED),
    "non-ASCII payload": (lambda: _good().replace(".", ".é", 1), P.MALFORMED),
    "non-ASCII signature": (lambda: _good()[:-1] + "ß", P.MALFORMED),
    "fullwidth version": (lambda: "v１" + _good()[2:], P.MALFORMED),
    "lone surrogate": (lambda: _good() + "\udcff", P.MALFORMED),
    "appended =": (lambda: _good() + "=", P.MALFORMED),
    "appended ==": (lambda: _good() + "==", P.MALFORMED),
    "appended A": (lambda: _good() + "A", P.MALFORMED),
    "appended AAAA": (lambda: _good() + "AAAA", P.MALFORMED),
    "appended newline": (lambda: _good() + "\n", P.MALFORMED),
    "appended NUL": (lambda: _good() + "\x00", P.MALFORMED),
    "appended space": (lambda: _good() + " ", P.MALFORMED),
    "appended part": (lambda: _good() + ".x", P.MALFORMED),
    "standard alphabet": (lambda: _good() + "+/", P.MALFORMED),
    "trailing bits": (lambda: _trailing_bits(_good()), P.MALFORMED),
    "padded payload": (lambda: "{}.{}=.{}".format(*_good().split(".")), P.BAD_SIGNATURE),
    "short signature": (lambda: _good()[:-4], P.MALFORMED),
    "huge": (lambda: "v1." + "A" * 1_000_000 + ".AAAA", P.MALFORMED),
    "wrong MAC": (
        lambda: tokens.issue(b"another-secret-0123456789abcdef-0123", "alice", ttl_s=3600, now=NOW),
        P.BAD_SIGNATURE,
    ),
    "payload swapped": (
        lambda: "{}.{}.{}".format(
            tokens.VERSION, tokens.issue(KEY, "bob", ttl_s=3600, now=NOW).split(".")[1], _good().split(".")[2]
        ),
        P.BAD_SIGNATURE,
    ),
    "expired": (lambda: tokens.issue(KEY, "alice", ttl_s=60, now=NOW - 120), P.EXPIRED),
    "ttl too long": (lambda: tokens.issue(KEY, "alice", ttl_s=30 * 86400, now=NOW), P.TOO_LONG_LIVED),
    "payload a list": (lambda: _signed(b"[1,2]"), P.MALFORMED),
    "payload not JSON": (lambda: _signed(b"\xff\xfe"), P.MALFORMED),
    "student not canonical": (lambda: _signed(b'{"exp":1800003600,"iat":1800000000,"s":"Alice"}'), P.MALFORMED),
    "exp a bool": (lambda: _signed(b'{"exp":true,"s":"alice"}'), P.MALFORMED),
    "exp a float": (lambda: _signed(b'{"exp":1800003600.5,"s":"alice"}'), P.MALFORMED),
    "board token": (lambda: tokens.issue_board(KEY, ttl_s=60, now=NOW), P.MALFORMED),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_TOKENS))
def test_a_hostile_token_is_refused_for_its_reason(name: str) -> None:
    make, problem = HOSTILE_TOKENS[name]
    with pytest.raises(tokens.TokenError) as err:
        tokens.verify(KEY, make(), now=NOW, max_ttl_s=7 * 86400)
    assert err.value.problem is problem


def test_the_untouched_token_verifies() -> None:
    assert tokens.verify(KEY, _good(), now=NOW, max_ttl_s=7 * 86400).student_key == "alice"


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=12))
def test_nothing_appended_to_a_token_verifies(suffix: str) -> None:
    with pytest.raises(tokens.TokenError):
        tokens.verify(KEY, _good() + suffix, now=NOW)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0), st.sampled_from(_ALPHABET))
def test_no_other_spelling_of_a_token_verifies(where: int, char: str) -> None:
    token = _good()
    i = where % len(token)
    if token[i] == char or token[i] == ".":
        return
    with pytest.raises(tokens.TokenError):
        tokens.verify(KEY, token[:i] + char + token[i + 1 :], now=NOW)


# --- the real gateway ----------------------------------------------------------------------


async def _raw_request(kit: Kit, head: bytes) -> bytes:
    reader, writer = await asyncio.open_connection(kit.server.host, kit.server.port)
    writer.write(head)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(65536), 15)
    finally:
        writer.close()


async def test_non_ascii_and_appended_tokens_get_401_over_http(kit: Kit) -> None:
    who = student()
    url = f"{kit.base}/v1/students/{who}/stream"
    for bad in (
        kit.token(who) + "=",
        kit.token(who) + "A",
        "v1.é.x",
        kit.token(who).replace(".", ".ü", 1),
        _trailing_bits(kit.token(who)),
    ):
        async with kit.http.get(url, params={"token": bad}) as response:
            assert response.status == 401, bad
            assert (await response.json())["error"] == "token_malformed"
    raw = await _raw_request(
        kit,
        f"GET /v1/students/{who}/stream HTTP/1.1\r\nHost: x\r\n".encode()
        + b"Authorization: Bearer v1.\xc3\xa9\xff.abc\r\nConnection: close\r\n\r\n",
    )
    assert raw.startswith(b"HTTP/1.1 401"), raw[:200]
    assert b"token_malformed" in raw


@pytest.fixture
async def kit(stack: Settings, unique_prefix: str) -> Any:
    async with running_gateway(stack, unique_prefix, gateway_request_timeout_s=1.0) as running:
        yield running


async def _closed_after(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, trickle: bytes = b""
) -> tuple[float, bytes]:
    """Seconds until the server closes the connection (trickling ``trickle`` meanwhile)."""
    started, got = time.monotonic(), b""
    for byte in trickle:
        try:
            writer.write(bytes([byte]))
            await writer.drain()
            got += await asyncio.wait_for(reader.read(1024), 0.2)
        except TimeoutError:
            continue
        except (ConnectionError, OSError):
            break
        if reader.at_eof():
            break
    with contextlib.suppress(ConnectionError, OSError):
        got += await asyncio.wait_for(reader.read(), 15)
    return time.monotonic() - started, got


async def test_half_sent_request_heads_are_not_held_open(kit: Kit) -> None:
    host, port = kit.server.host, kit.server.port
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    await writer.drain()
    half, got = await _closed_after(reader, writer)
    assert got == b"" and 0.5 < half < 5.0, (half, got)
    writer.close()

    reader, writer = await asyncio.open_connection(host, port)  # says nothing at all
    silent, got = await _closed_after(reader, writer)
    assert got == b"" and silent < 5.0
    writer.close()

    reader, writer = await asyncio.open_connection(host, port)  # a byte at a time never finishes
    trickled, got = await _closed_after(reader, writer, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X" * 60)
    assert b"HTTP/1.1 200" not in got and trickled < 5.0
    writer.close()

    async with kit.http.get(f"{kit.base}/healthz") as response:  # whole requests still pass
        assert response.status == 200


async def test_a_trickled_question_body_gets_408(kit: Kit) -> None:
    who = student()
    head = (
        f"POST /v1/students/{who}/messages HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {kit.token(who)}\r\nContent-Type: application/json\r\n"
        'Content-Length: 100\r\n\r\n{"text": '
    ).encode()
    started = time.monotonic()
    raw = await _raw_request(kit, head)
    assert raw.startswith(b"HTTP/1.1 408"), raw[:200]
    assert b"request_timeout" in raw and time.monotonic() - started < 5.0


async def test_a_token_over_its_stream_cap_loses_its_oldest_stream(stack: Settings, unique_prefix: str) -> None:
    async with running_gateway(stack, unique_prefix, sse_max_streams_per_token=2) as kit:
        who = student()
        token = kit.token(who)
        oldest = await open_stream(kit, who, token)
        middle = await open_stream(kit, who, token)
        newest = await open_stream(kit, who, kit.token(who, ttl_s=600))  # another link, same student
        evicted = await oldest.until(lambda e: e.event == "evicted", 10)
        assert evicted.json()["reason"] == "too_many_streams" and evicted.json()["limit"] == 2
        with pytest.raises(StopAsyncIteration):  # the oldest stream is over
            await oldest.until(lambda e: False, 10)
        sent = await kit.store(who, "for the two streams left")
        for stream in (middle, newest):
            assert [m["message_id"] for m in await stream.messages(1)] == [sent]
        async with kit.http.get(f"{kit.base}/metrics") as response:
            text = await response.text()
        assert 'vexnudge_gateway_limited_total{limit="stream_evicted"} 1.0' in text
        assert 'vexnudge_gateway_open_streams{kind="student"} 2.0' in text
        middle.close()
        newest.close()


async def test_a_full_gateway_refuses_new_streams_with_503(stack: Settings, unique_prefix: str) -> None:
    async with running_gateway(stack, unique_prefix, sse_max_streams=2, sse_max_streams_per_token=1) as kit:
        alice, bob, carol = student(), student(), student()
        a = await open_stream(kit, alice, kit.token(alice))
        b = await open_stream(kit, bob, kit.token(bob))
        async with kit.http.get(
            f"{kit.base}/v1/students/{carol}/stream", params={"token": kit.token(carol)}
        ) as response:
            assert response.status == 503
            assert response.content_type == "application/json"
            assert (await response.json())["error"] == "too_many_streams"
            assert int(response.headers["Retry-After"]) > 0
        again = await open_stream(kit, alice, kit.token(alice))  # alice replaces her own stream
        assert (await a.until(lambda e: e.event == "evicted", 10)).json()["limit"] == 1
        b.close()
        await asyncio.sleep(0.5)
        c = await open_stream(kit, carol, kit.token(carol))  # a freed slot is usable again
        c.close()
        again.close()


async def _ask(
    kit: Kit, who: str, text: str, key: str | None = None, token: str | None = None
) -> tuple[int, dict[str, Any], Any]:
    headers = {"Authorization": f"Bearer {token or kit.token(who)}", "Idempotency-Key": key or uuid.uuid4().hex}
    async with kit.http.post(
        f"{kit.base}/v1/students/{who}/messages", json={"text": text}, headers=headers
    ) as response:
        return response.status, await response.json(), response.headers


async def test_a_question_flood_gets_429_with_retry_after(stack: Settings, unique_prefix: str) -> None:
    async with running_gateway(stack, unique_prefix, question_rate_limit="2/minute", question_max_pending=100) as kit:
        who, other = student(), student()
        assert (await _ask(kit, who, "first?", "k1"))[0] == 202
        assert (await _ask(kit, who, "second?", "k2"))[0] == 202
        status, body, headers = await _ask(kit, who, "third?", "k3")
        assert status == 429 and body["error"] == "too_many_questions"
        assert 1 <= int(headers["Retry-After"]) <= 60 and "detail" in body
        status, body, _ = await _ask(kit, who, "first?", "k1")  # a retry is not a new question
        assert status == 202 and body["duplicate"] is True
        assert (await _ask(kit, other, "mine?"))[0] == 202  # per student


async def test_too_many_unanswered_questions_get_429(stack: Settings, unique_prefix: str) -> None:
    async with running_gateway(stack, unique_prefix, question_rate_limit="100/minute", question_max_pending=2) as kit:
        who = student()
        first = await _ask(kit, who, "one?")
        assert first[0] == 202 and (await _ask(kit, who, "two?"))[0] == 202
        status, body, headers = await _ask(kit, who, "three?")
        assert status == 429 and body["error"] == "too_many_pending"
        assert headers["Retry-After"] == str(questions.PENDING_RETRY_AFTER_S)
        await kit.pool.execute(
            "update chat.requests set status = 'answered' where request_id = $1", uuid.UUID(first[1]["request_id"])
        )
        assert (await _ask(kit, who, "three?"))[0] == 202


async def test_the_admin_token_is_refused_in_an_address(kit: Kit) -> None:
    header = {"Authorization": f"Bearer {ADMIN}"}
    for method, path in (("GET", "/admin/board/stream"), ("POST", "/admin/tick"), ("POST", "/admin/board/token")):
        async with kit.http.request(
            method, kit.base + path, params={"admin_token": ADMIN}, json={"student_id": "a", "session_id": "s"}
        ) as response:
            assert response.status == 401, path
            assert (await response.json())["error"] == "admin_token_in_query"
        async with kit.http.request(
            method, kit.base + path, params={"admin_token": ADMIN}, headers=header, json={}
        ) as response:
            assert response.status == 401, path  # even beside a good header: it has leaked
    async with kit.http.post(f"{kit.base}/admin/board/token", headers=header) as response:
        assert response.status == 200 and response.headers["Cache-Control"] == "no-store"
        minted = await response.json()
    assert minted["expires_at"] - time.time() <= kit.settings.board_token_ttl_s + 1
    opened = await kit.http.get(f"{kit.base}/admin/board/stream", params={"board_token": minted["token"]})
    assert opened.status == 200
    assert (await Stream(opened).until(lambda e: e.event == "snapshot")).event == "snapshot"
    opened.close()
    who = student()
    for bad, code in (
        (kit.token(who), "board_token_malformed"),
        (tokens.issue_board(ADMIN.encode(), ttl_s=60, now=time.time() - 120), "board_token_expired"),
        (tokens.issue_board(b"x" * 40, ttl_s=60, now=time.time()), "board_token_bad_signature"),
        (minted["token"] + "=", "board_token_malformed"),
    ):
        async with kit.http.get(f"{kit.base}/admin/board/stream", params={"board_token": bad}) as response:
            assert response.status == 401
            assert (await response.json())["error"] == code


class CuttableProxy:
    """A loopback TCP proxy to PostgreSQL that the test can cut (connections reset, new
    ones closed at once) and restore, as an outage looks to the gateway."""

    def __init__(self, port: int) -> None:
        self.target, self.up = port, True
        self.links: set[asyncio.StreamWriter] = set()
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._link, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.up:
            writer.transport.abort()
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        self.links |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, OSError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def cut(self) -> None:
        self.up = False
        for writer in self.links:
            writer.transport.abort()
        self.links.clear()

    async def close(self) -> None:
        self.cut()
        if self.server is not None:
            self.server.close()


async def test_the_stream_goes_live_without_history_and_fills_it_in_later(stack: Settings, unique_prefix: str) -> None:
    proxy = CuttableProxy(stack.postgres_port)
    port = await proxy.start()
    url = f"postgresql://vexnudge@127.0.0.1:{port}/vexnudge"
    try:
        async with running_gateway(
            stack, unique_prefix, gateway_database_url=url, sse_history_timeout_s=2.0, sse_history_retry_s=0.5
        ) as kit:
            who = student()
            older = [await kit.store(who, f"before {i}", publish=False, published_before=True) for i in range(3)]
            proxy.cut()  # PostgreSQL is unreachable for the gateway (the kit's own pool is direct)
            started = time.monotonic()
            response = await kit.http.get(
                f"{kit.base}/v1/students/{who}/stream", params={"token": kit.token(who)}, headers={"Last-Event-ID": "0"}
            )
            assert response.status == 200
            stream = Stream(response)
            ready = (await stream.until(lambda e: e.event == "ready", 10)).json()
            assert ready == {"replayed": 0, "cursor": 0, "history": "pending"}
            assert time.monotonic() - started < 5.0
            live = await kit.store(who, "while the database is unreachable for the gateway")
            [got] = await stream.messages(1)
            assert got["message_id"] == live and got["id"] is None  # the cursor stays put
            await asyncio.sleep(1.5)  # a few retries fail
            proxy.up = True
            done = await stream.until(lambda e: e.event == "history", 20)
            assert done.json() == {"replayed": 3, "cursor": live} and done.id == str(live)
            filled = [e for e in stream.received if e.event.endswith("_message")][1:]
            assert [e.json()["message_id"] for e in filled] == older
            assert all(e.id is None for e in filled)
            after = await kit.store(who, "after the history")
            [last] = await stream.messages(1)
            assert last["message_id"] == after and last["id"] == str(after)
            async with kit.http.get(f"{kit.base}/metrics") as metrics:
                assert "vexnudge_gateway_history_deferred_total 1.0" in await metrics.text()
            stream.close()
    finally:
        await proxy.close()


class RefusingProducer:
    """A Kafka producer whose broker is gone."""

    async def send_and_wait(self, *args: Any, **kwargs: Any) -> None:
        raise KafkaConnectionError("the broker is unreachable (test)")


async def test_a_question_stored_but_not_published_is_published_again(kit: Kit) -> None:
    gw = kit.server.app[state.GATEWAY]
    who = student()
    stream = await open_stream(kit, who, kit.token(who))
    real = gw.producer
    gw.producer = RefusingProducer()  # type: ignore[assignment]
    try:
        retried = await _ask(kit, who, "stored, then the broker failed", "retry-key")
        swept = await _ask(kit, who, "never sent again by the page", "sweep-key")
    finally:
        gw.producer = real
    for status, body, headers in (retried, swept):
        assert status == 503 and body["error"] == "unavailable" and headers["Retry-After"]
    stored = await kit.pool.fetch("select request_id::text, status from chat.requests where student_key = $1", who)
    assert len(stored) == 2 and {r["status"] for r in stored} == {"pending"}

    status, body, _ = await _ask(kit, who, "stored, then the broker failed", "retry-key")
    assert status == 202 and body["duplicate"] is True  # the page's retry: same key, stored once
    assert await questions.republish_once(gw, older_than_s=0) == 1  # the sweep takes the other one
    assert await questions.republish_once(gw, older_than_s=0) == 0  # and only once

    echoes = await stream.messages(2)
    assert sorted(m["text"] for m in echoes) == ["never sent again by the page", "stored, then the broker failed"]
    assert all(m["event"] == "student_message" for m in echoes)
    topic = kit.settings.topic(T.CHAT_REQUESTS.name)
    published = [decode(ChatRequest, r.value or b"") async for r in read_to_end(kit.settings, [topic])]
    assert {c.request_id for c in published} == {r["request_id"] for r in stored}
    assert all(c.student_key == who for c in published)
    for r in stored:
        question = await repo_requests.get_question(kit.pool, r["request_id"])
        assert question is not None and question.status == "pending"
    assert (
        await kit.pool.fetchval(
            "select count(*) from chat.messages where student_key = $1 and published_at is null", who
        )
        == 0
    )
    stream.close()
