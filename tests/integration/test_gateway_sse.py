"""The SSE gateway against the real broker and the real PostgreSQL.

The gateway runs in-process on an aiohttp test server with its real clients
(group-less consumer, producer, pool) on this test's own topics.  Messages are
stored with the repository and published to ``vex.feedback`` the way the
feedback service does, so the stream sees exactly what production sees.
"""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import asyncpg
import pytest
from aiohttp.test_utils import TestServer
from aiokafka import AIOKafkaProducer
from pydantic import SecretStr

from delivery.db import create_pool
from delivery.gateway import tokens
from delivery.gateway.app import ConfigurationError, build_app
from delivery.gateway.client import SseEvent, SseParser, events
from delivery.repo import events as repo_events
from delivery.repo import messages as repo_messages
from delivery.repo import requests as repo_requests
from delivery.repo import triggers as repo_triggers
from tests.fakes.fixtures import fake_ollama  # noqa: F401 - a fixture
from tests.fakes.ollama_server import FakeOllama
from topology import topics as T
from topology.kafka_admin import read_to_end
from topology.schemas.analysis import TriggerEvidence, TriggerFired, TriggerType
from topology.schemas.base import decode, encode
from topology.schemas.feedback import ChatRequest, FeedbackMessage, FeedbackRequest, Lane, NudgeOutcome
from topology.settings import Settings

pytestmark = pytest.mark.integration

SECRET = "test-token-secret-0123456789abcdef-0123456789"
ADMIN = "test-admin-token-0123456789abcdef-0123456789"
WAIT_S = 15.0


@dataclass
class Kit:
    """A running gateway and the clients a test drives it with."""

    settings: Settings
    server: TestServer
    pool: asyncpg.Pool
    producer: AIOKafkaProducer
    http: aiohttp.ClientSession

    @property
    def base(self) -> str:
        return str(self.server.make_url("")).rstrip("/")

    def token(self, student: str, ttl_s: float = 3600.0, now: float | None = None, secret: str = SECRET) -> str:
        return tokens.issue(secret.encode(), student, ttl_s=ttl_s, now=now or time.time())

    async def store(
        self,
        student: str,
        text: str,
        *,
        origin: str = "proactive",
        trigger_id: str | None = None,
        publish: bool = True,
        published_before: bool = False,
    ) -> int:
        """Store an assistant message and publish it like the feedback service does.

        ``publish=False``: not published now; ``published_before`` marks it as
        handed over long ago (so no worker's sweeper publishes it again).
        """
        stored = await repo_messages.insert_message(
            self.pool,
            response_id=str(uuid.uuid4()),
            student_key=student,
            session_id="s1",
            role="assistant",
            text=text,
            origin=origin,
            classes=["REASSURE"],
            model="template",
            trigger_id=trigger_id,
        )
        if publish:
            await self.publish(stored.id)
        elif published_before:
            await repo_messages.mark_published(self.pool, [stored.id])
        return stored.id

    async def publish(self, message_id: int) -> None:
        row = await self.pool.fetchrow("select response_id::text from chat.messages where id = $1", message_id)
        message = await repo_messages.get_message(self.pool, row["response_id"])
        assert message is not None
        await self.producer.send_and_wait(
            self.settings.topic(T.FEEDBACK.name),
            encode(message.to_feedback_message()),
            key=message.student_key.encode(),
        )
        await repo_messages.mark_published(self.pool, [message_id])


def student() -> str:
    return f"stu-{uuid.uuid4().hex[:10]}"


@asynccontextmanager
async def running_gateway(
    stack: Settings, prefix: str, *, gateway_database_url: str | None = None, **overrides: Any
) -> AsyncIterator[Kit]:
    """A gateway on the test's own topics, plus a pool, a producer and an HTTP session.

    ``gateway_database_url``: the gateway alone reaches PostgreSQL there (e.g.
    through a proxy the test can cut); the kit's own pool stays direct.
    """
    settings = stack.model_copy(
        update={
            "topic_prefix": prefix,
            "token_secret": SecretStr(SECRET),
            "admin_token": SecretStr(ADMIN),
            "sse_heartbeat_s": 0.4,
            "sse_retry_ms": 1500,
            **overrides,
        }
    )
    served = (
        settings
        if gateway_database_url is None
        else settings.model_copy(update={"database_url": SecretStr(gateway_database_url)})
    )
    server = TestServer(build_app(served), host="127.0.0.1")
    await server.start_server()
    pool = await create_pool(settings)
    producer = AIOKafkaProducer(
        bootstrap_servers=settings.kafka_bootstrap_servers, acks="all", max_request_size=4 * 1024 * 1024
    )
    await producer.start()
    http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_read=WAIT_S))
    try:
        yield Kit(settings, server, pool, producer, http)
    finally:
        await http.close()
        await producer.stop()
        await pool.close()
        await server.close()


@pytest.fixture
async def kit(stack: Settings, unique_prefix: str) -> AsyncIterator[Kit]:
    async with running_gateway(stack, unique_prefix) as running:
        yield running


class Stream:
    """One open SSE connection and what it has received."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response
        self.parser = SseParser()
        self.received: list[SseEvent] = []
        self._iter = events(response, self.parser, comments=True).__aiter__()

    async def next(self, wait_s: float = WAIT_S) -> SseEvent:
        event = await asyncio.wait_for(self._iter.__anext__(), wait_s)
        self.received.append(event)
        return event

    async def until(self, predicate: Any, wait_s: float = WAIT_S) -> SseEvent:
        deadline = time.monotonic() + wait_s
        while True:
            event = await self.next(max(0.01, deadline - time.monotonic()))
            if predicate(event):
                return event

    async def messages(self, count: int, wait_s: float = WAIT_S) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while len(out) < count:
            event = await self.until(lambda e: e.event.endswith("_message"), wait_s)
            out.append({"id": event.id, "event": event.event, **event.json()})
        return out

    async def quiet(self, seconds: float) -> list[SseEvent]:
        """Message events that arrive within ``seconds`` (expected: none)."""
        got: list[SseEvent] = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                event = await self.next(left)
            except TimeoutError:
                break
            if event.event.endswith("_message"):
                got.append(event)
        return got

    def close(self) -> None:
        self.response.close()


async def open_stream(
    kit: Kit,
    student_id: str,
    token: str | None,
    *,
    last_id: int | None = None,
    query: dict[str, str] | None = None,
    header: bool = True,
) -> Stream:
    params = dict(query or {})
    if token is not None:
        params["token"] = token
    headers = {"Last-Event-ID": str(last_id)} if last_id is not None and header else {}
    if last_id is not None and not header:
        params["last_event_id"] = str(last_id)
    response = await kit.http.get(f"{kit.base}/v1/students/{student_id}/stream", params=params, headers=headers)
    assert response.status == 200, await response.text()
    stream = Stream(response)
    await stream.until(lambda e: e.event == "ready")
    return stream


# --- the stream ----------------------------------------------------------------------


async def test_stream_headers_retry_and_heartbeats(kit: Kit) -> None:
    who = student()
    response = await kit.http.get(f"{kit.base}/v1/students/{who}/stream", params={"token": kit.token(who)})
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/event-stream")
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["X-Accel-Buffering"] == "no"
    stream = Stream(response)
    first = await stream.next()
    assert first.retry == 1500
    pings = 0
    started = time.monotonic()
    while pings < 2:
        event = await stream.next(3.0)
        pings += event.comment == "ping"
    assert time.monotonic() - started < 3.0
    stream.close()


async def test_live_frames_carry_ids_and_student_safe_payload(kit: Kit) -> None:
    who = student()
    stream = await open_stream(kit, who, kit.token(who))
    sent_at = time.time()
    _, mid = await _store_trigger(kit, who, str(uuid.uuid4()), message="Try changing one number at a time.")
    [got] = await stream.messages(1)
    assert got["id"] == str(mid) and got["message_id"] == mid
    assert got["event"] == "assistant_message"
    assert got["origin"] == "proactive" and got["badge"] == "Check-in"
    assert got["text"] == "Try changing one number at a time."
    assert abs(got["created_ts"] - sent_at) < 5 and got["created_at"].endswith("Z")
    for internal in ("trigger_type", "trigger_detail", "feedback_classes", "model", "trigger_id"):
        assert internal not in got, internal
    assert "wheel_spin" not in str(stream.received[-1].data)
    stream.close()


async def test_resume_replays_exactly_the_missed_messages_in_order(kit: Kit) -> None:
    who = student()
    token = kit.token(who)
    stream = await open_stream(kit, who, token)
    first = [await kit.store(who, f"live {i}") for i in range(3)]
    got = await stream.messages(3)
    assert [int(m["id"]) for m in got] == first
    cursor = stream.parser.last_event_id
    assert cursor == str(first[-1])
    stream.close()

    # Stored while disconnected: some published (nobody listening), one never published.
    missed = [await kit.store(who, f"missed {i}") for i in range(4)]
    missed.append(await kit.store(who, "stored, not yet published", publish=False))

    again = await open_stream(kit, who, token, last_id=int(cursor))
    replayed = [int(e.id) for e in again.received if e.event.endswith("_message") and e.id]
    assert replayed == missed
    ready = next(e for e in again.received if e.event == "ready").json()
    assert ready == {"replayed": len(missed), "cursor": missed[-1], "history": "complete"}

    later = await kit.store(who, "after the reconnect")
    [live] = await again.messages(1)
    assert int(live["id"]) == later
    await kit.publish(missed[-1])  # the late publication of a replayed message: not sent twice
    assert await again.quiet(1.0) == []
    again.close()

    # The query-string cursor (for clients that cannot set headers) behaves the same.
    third = await open_stream(kit, who, token, last_id=missed[1], header=False)
    ids = [int(e.id) for e in third.received if e.event.endswith("_message") and e.id]
    assert ids == [*missed[2:], later]
    third.close()


async def test_messages_stored_during_the_replay_are_sent_exactly_once(kit: Kit) -> None:
    who = student()
    token = kit.token(who)
    backlog = [await kit.store(who, f"old {i}", publish=False, published_before=True) for i in range(1200)]
    response = await kit.http.get(
        f"{kit.base}/v1/students/{who}/stream", params={"token": token}, headers={"Last-Event-ID": "0"}
    )
    stream = Stream(response)

    async def write_during_replay() -> list[int]:
        return [await kit.store(who, f"new {i}") for i in range(20)]

    writer = asyncio.create_task(write_during_replay())
    fresh = await writer
    got = await stream.messages(len(backlog) + len(fresh), 60.0)
    ids = [m["message_id"] for m in got]
    assert sorted(ids) == sorted(backlog + fresh)
    assert len(set(ids)) == len(ids)
    assert ids[: len(backlog)] == backlog
    assert await stream.quiet(1.0) == []
    stream.close()


async def test_every_replica_delivers_and_resumes_any_student(kit: Kit, stack: Settings, unique_prefix: str) -> None:
    async with running_gateway(stack, unique_prefix) as other:
        who = student()
        token = kit.token(who)
        on_a = await open_stream(kit, who, token)
        on_b = await open_stream(other, who, token)
        first = await kit.store(who, "seen by both replicas")
        assert [m["message_id"] for m in await on_a.messages(1)] == [first]
        assert [m["message_id"] for m in await on_b.messages(1)] == [first]
        on_a.close()
        missed = await kit.store(who, "stored while the student moved to replica B")
        moved = await open_stream(other, who, token, last_id=first)
        assert [int(e.id) for e in moved.received if e.id] == [missed]
        assert [m["message_id"] for m in await on_b.messages(1)] == [missed]
        moved.close()
        on_b.close()


async def test_since_returns_history_then_live(kit: Kit) -> None:
    who = student()
    old = await kit.store(who, "earlier today", publish=False, published_before=True)
    stream = await open_stream(kit, who, kit.token(who), query={"since": str(time.time() - 3600)})
    assert [int(e.id) for e in stream.received if e.id] == [old]
    stream.close()
    plain = await open_stream(kit, who, kit.token(who))
    assert [e for e in plain.received if e.id] == []
    plain.close()


async def test_a_student_never_receives_another_students_messages(kit: Kit) -> None:
    alice, bob = student(), student()
    a = await open_stream(kit, alice, kit.token(alice))
    b = await open_stream(kit, bob, kit.token(bob))
    for i in range(3):
        await kit.store(bob, f"for bob {i}")
    mine = await kit.store(alice, "for alice")
    assert [m["message_id"] for m in await a.messages(1)] == [mine]
    assert len(await b.messages(3)) == 3
    assert await a.quiet(0.8) == []
    a.close()
    replay = await open_stream(kit, alice, kit.token(alice), last_id=0)
    assert [int(e.id) for e in replay.received if e.id] == [mine]
    replay.close()
    b.close()


async def test_bad_cursor_or_since_is_refused(kit: Kit) -> None:
    who = student()
    url = f"{kit.base}/v1/students/{who}/stream"
    for bad in ("abc", "-1", "1.5", str(2**63)):
        async with kit.http.get(url, params={"token": kit.token(who)}, headers={"Last-Event-ID": bad}) as r:
            assert r.status == 400, bad
            assert (await r.json())["error"] == "bad_last_event_id"
    async with kit.http.get(url, params={"token": kit.token(who), "since": "yesterday"}) as r:
        assert r.status == 400
        assert (await r.json())["error"] == "bad_since"


async def test_a_slow_client_is_dropped_and_resumes_without_loss(
    stack: Settings, unique_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with running_gateway(stack, unique_prefix, sse_client_queue=4) as kit:
        who = student()
        token = kit.token(who)
        writer = await _stalled_client(kit, who, token)
        stored = [await kit.store(who, f"{i} " + "x" * 100_000, publish=False) for i in range(40)]
        for message_id in stored:
            await kit.publish(message_id)
        deadline = time.monotonic() + WAIT_S
        while "dropping slow SSE client" not in caplog.text and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert f"dropping slow SSE client student={who}" in caplog.text
        async with kit.http.get(f"{kit.base}/metrics") as response:
            assert 'vexnudge_gateway_dropped_clients_total{kind="student"} 1.0' in await response.text()
        writer.close()
        # Reconnecting from the first message id gets everything after it, once, in order.
        again = await open_stream(kit, who, token, last_id=stored[0])
        assert [int(e.id) for e in again.received if e.id] == stored[1:]
        again.close()


async def _stalled_client(kit: Kit, who: str, token: str) -> asyncio.StreamWriter:
    """A raw connection with a tiny receive window that reads the headers and then nothing."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (kit.server.host, kit.server.port))
    reader, writer = await asyncio.open_connection(sock=sock, limit=4096)
    writer.write(
        f"GET /v1/students/{who}/stream?token={token} HTTP/1.1\r\n"
        f"Host: {kit.server.host}\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"event: ready"), WAIT_S)
    assert head.startswith(b"HTTP/1.1 200")
    return writer


# --- authentication ------------------------------------------------------------------


async def test_student_token_refusals(kit: Kit) -> None:
    who, other = student(), student()
    url = f"{kit.base}/v1/students/{who}/stream"
    cases = {
        "token_missing": (401, None),
        "token_malformed": (401, "not-a-token"),
        "token_bad_signature": (401, kit.token(who, secret="another-secret-0123456789abcdef-0123")),
        "token_expired": (401, kit.token(who, ttl_s=60, now=time.time() - 120)),
        "token_other_student": (403, kit.token(other)),
    }
    for code, (status, token) in cases.items():
        params = {"token": token} if token else {}
        async with kit.http.get(url, params=params) as response:
            assert response.status == status, code
            assert response.content_type == "application/json"
            assert (await response.json())["error"] == code
        async with kit.http.post(
            f"{kit.base}/v1/students/{who}/messages",
            json={"text": "hi"},
            headers={"Authorization": f"Bearer {token}"} if token else {},
        ) as response:
            assert response.status == status, code
    # The raw id alone opens nothing; the token's own student (any spelling) does.
    async with kit.http.get(url, params={"student": who}) as response:
        assert response.status == 401
    async with kit.http.get(
        f"{kit.base}/v1/students/{who.upper()}/stream", headers={"Authorization": f"Bearer {kit.token(who)}"}
    ) as response:
        assert response.status == 200


async def test_admin_routes_need_the_admin_token(kit: Kit) -> None:
    who = student()
    for path, method in (("/admin/board/stream", "GET"), ("/admin/tick", "POST")):
        for headers, params in (
            ({}, {}),
            ({"Authorization": "Bearer wrong"}, {}),
            ({"Authorization": f"Bearer {kit.token(who)}"}, {}),
            ({}, {"admin_token": "wrong"}),
        ):
            async with kit.http.request(
                method, kit.base + path, headers=headers, params=params, json={"student_id": who, "session_id": "s1"}
            ) as response:
                assert response.status == 401, (path, headers, params)
                assert (await response.json())["error"].startswith("admin_token")


async def test_admin_tick_validation(kit: Kit) -> None:
    auth = {"Authorization": f"Bearer {ADMIN}"}
    for body, status, code in (
        (b"nope", 400, "invalid_json"),
        (b"[]", 400, "invalid_json"),
        (b'{"session_id": "s"}', 422, "student_id_invalid"),
        (b'{"student_id": "a", "session_id": 3}', 422, "session_id_invalid"),
    ):
        async with kit.http.post(f"{kit.base}/admin/tick", data=body, headers=auth) as response:
            assert response.status == status, body
            assert (await response.json())["error"] == code


async def test_admin_tick_detects_and_pushes_once(stack: Settings, unique_prefix: str, fake_ollama: FakeOllama) -> None:  # noqa: F811
    from streams.ingest import decode_line
    from tests.e2e.telemetry import wheel_spin_lines

    overrides = {"ollama_host": fake_ollama.url, "trigger_daemon_enabled": True, "nudge_cooldown_s": 0.0}
    async with running_gateway(stack, unique_prefix, **overrides) as kit:
        student_id, session = f"Tick-{uuid.uuid4().hex[:8]}", f"sess-{uuid.uuid4().hex[:6]}"
        who = student_id.lower()
        events = [decode_line(line) for line in wheel_spin_lines(student_id, session, now=time.time())]
        assert await repo_events.store_events(kit.pool, events) == len(events)  # type: ignore[arg-type]
        stream = await open_stream(kit, who, kit.token(who))
        auth = {"Authorization": f"Bearer {ADMIN}"}
        body = {"student_id": student_id, "session_id": session}
        async with kit.http.post(f"{kit.base}/admin/tick", json=body, headers=auth) as response:
            assert response.status == 200, await response.text()
            first = await response.json()
        assert [t["type"] for t in first["detected"]] == ["wheel_spin"]
        assert len(first["pushed"]) == 1 and first["pushed"][0]["origin"] == "proactive"
        [live] = await stream.messages(1)
        assert live["message_id"] == first["pushed"][0]["message_id"] and live["badge"] == "Check-in"
        async with kit.http.post(f"{kit.base}/admin/tick", json=body, headers=auth) as response:
            again = await response.json()
        assert [t["trigger_id"] for t in again["detected"]] == [t["trigger_id"] for t in first["detected"]]
        assert again["pushed"] == []
        assert await stream.quiet(1.0) == []
        stream.close()


def test_gateway_refuses_to_start_without_secrets(stack: Settings) -> None:
    for update in (
        {"token_secret": None, "admin_token": SecretStr(ADMIN)},
        {"token_secret": SecretStr(SECRET), "admin_token": None},
        {"token_secret": SecretStr(" "), "admin_token": None},
        {"token_secret": SecretStr("x" * 31), "admin_token": SecretStr(ADMIN)},
        {"token_secret": SecretStr(SECRET), "admin_token": SecretStr("short-admin")},
    ):
        settings = stack.model_copy(update=update)
        with pytest.raises(ConfigurationError, match=r"TOKEN_SECRET|ADMIN_TOKEN"):
            build_app(settings)


# --- questions -----------------------------------------------------------------------


async def test_question_validation(kit: Kit) -> None:
    who = student()
    url = f"{kit.base}/v1/students/{who}/messages"
    auth = {"Authorization": f"Bearer {kit.token(who)}"}
    bad: list[tuple[Any, int, str]] = [
        (b"not json", 400, "invalid_json"),
        (b"[1, 2]", 400, "invalid_json"),
        (b"{}", 422, "text_missing"),
        (b'{"text": 42}', 422, "text_not_string"),
        (b'{"text": "   "}', 422, "text_empty"),
        ('{"text": "%s"}' % ("x" * 2001), 422, "text_too_long"),
        (b'{"text": "hi", "session_id": 7}', 422, "session_id_invalid"),
    ]
    for body, status, code in bad:
        async with kit.http.post(url, data=body, headers=auth) as response:
            assert response.status == status, code
            assert (await response.json())["error"] == code
    async with kit.http.post(url, json={"text": "y" * 2000}, headers=auth) as response:
        assert response.status == 202


async def test_question_is_stored_published_and_echoed(kit: Kit) -> None:
    who = student()
    token = kit.token(who)
    stream = await open_stream(kit, who, token)
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": "q-1"}
    body = {"text": "Why does my robot turn the wrong way?", "session_id": "sess-9"}
    async with kit.http.post(f"{kit.base}/v1/students/{who}/messages", json=body, headers=headers) as r:
        assert r.status == 202
        first = await r.json()
    async with kit.http.post(f"{kit.base}/v1/students/{who}/messages", json=body, headers=headers) as r:
        assert r.status == 202
        repeat = await r.json()
    assert repeat["request_id"] == first["request_id"] and repeat["duplicate"] is True
    assert first["duplicate"] is False

    question = await repo_requests.get_question(kit.pool, first["request_id"])
    assert question is not None and question.status == "pending"
    assert question.question == body["text"] and question.session_id == "sess-9"

    [echo] = await stream.messages(1)
    assert echo["event"] == "student_message" and echo["message_id"] == first["message_id"]
    assert echo["role"] == "student" and echo["text"] == body["text"]
    assert await stream.quiet(0.5) == []
    stream.close()

    records = [r async for r in read_to_end(kit.settings, [kit.settings.topic(T.CHAT_REQUESTS.name)])]
    published = [(r.key, decode(ChatRequest, r.value or b"")) for r in records]
    assert {req.request_id for _, req in published} == {first["request_id"]}
    for key, req in published:
        assert key == who.encode()
        assert req.student_key == who and req.text == body["text"] and req.session_id == "sess-9"


# --- teacher board, health, metrics --------------------------------------------------


def _trigger(who: str, trigger_id: str) -> TriggerFired:
    return TriggerFired(
        trigger_id=trigger_id,
        type=TriggerType.WHEEL_SPIN,
        student_key=who,
        student_id=who,
        session_id="s1",
        run_index=int(uuid.UUID(trigger_id).int % 10_000),
        alert=None,
        ts=time.time(),
        timestamp="2026-01-01T00:00:00Z",
        playground="GO-Mars",
        event_id="42",
        detail="6 identical reruns",
        evidence=TriggerEvidence(recent_distances=[3, 0, 0, 0, 0, 0, 0], zero_streak=6, threshold=6),
    )


async def _store_trigger(
    kit: Kit, who: str, trigger_id: str, *, reason: str | None = None, message: str | None = None
) -> tuple[TriggerFired, int | None]:
    """A stored fire as the service leaves it: suppressed (``reason``), or acted with ``message``."""
    trigger = _trigger(who, trigger_id)
    request = FeedbackRequest(
        request_id=str(uuid.uuid4()),
        lane=Lane.PROACTIVE,
        student_key=who,
        student_id=who,
        session_id="s1",
        playground="GO-Mars",
        ts=trigger.ts,
        trigger=trigger,
        decision="suppress" if reason else "act",
        suppress_reason=reason,
    )
    status = "suppressed" if reason else "pending"
    assert await repo_triggers.record_trigger(kit.pool, request, status=status, reason=reason)
    if message is None:
        return trigger, None
    message_id = await kit.store(who, message, trigger_id=trigger_id)
    response_id = await kit.pool.fetchval("select response_id::text from chat.messages where id = $1", message_id)
    assert await repo_triggers.mark_acted(kit.pool, trigger_id, response_id)
    return trigger, message_id


async def test_board_snapshot_and_live_triggers(kit: Kit) -> None:
    who = student()
    early, _ = await _store_trigger(kit, who, str(uuid.uuid4()), reason="cooldown")
    sent, message_id = await _store_trigger(
        kit, who, str(uuid.uuid4()), message="Have you tried changing the turn angle?"
    )
    response = await kit.http.get(f"{kit.base}/admin/board/stream", headers={"Authorization": f"Bearer {ADMIN}"})
    assert response.status == 200
    board = Stream(response)
    snapshot = (await board.until(lambda e: e.event == "snapshot")).json()["triggers"]
    rows = {row["trigger_id"]: row for row in snapshot if row["student_key"] == who}
    assert rows[early.trigger_id]["status"] == "suppressed" and rows[early.trigger_id]["reason"] == "cooldown"
    assert rows[early.trigger_id]["evidence"]["zero_streak"] == 6
    assert rows[sent.trigger_id]["message"]["message_id"] == message_id
    assert rows[sent.trigger_id]["status"] == "acted"

    live = _trigger(who, str(uuid.uuid4()))  # only published: the board shows it before any row
    topic = kit.settings.topic
    await kit.producer.send_and_wait(topic(T.TRIGGERS.name), encode(live), key=who.encode())
    got = (await board.until(lambda e: e.event == "trigger")).json()
    assert got["trigger_id"] == live.trigger_id and got["type"] == "wheel_spin"
    assert got["evidence"]["recent_distances"] == [3, 0, 0, 0, 0, 0, 0] and got["status"] == "pending"

    outcome = NudgeOutcome(
        trigger_id=live.trigger_id,
        trigger_type="wheel_spin",
        student_key=who,
        session_id="s1",
        status="suppressed",
        reason="cooldown",
        at=time.time(),
    )
    await kit.producer.send_and_wait(topic(T.NUDGE_OUTCOMES.name), encode(outcome), key=who.encode())
    got = (await board.until(lambda e: e.event == "outcome")).json()
    assert got["trigger_id"] == live.trigger_id and got["reason"] == "cooldown"

    nudge_id = 10**12 + uuid.uuid4().int % 10**6  # a record only: the live trigger has no row
    nudge = FeedbackMessage(
        message_id=nudge_id,
        response_id=str(uuid.uuid4()),
        student_key=who,
        session_id="s1",
        role="assistant",
        origin=Lane.PROACTIVE,
        text="A nudge",
        feedback_classes=["REASSURE"],
        model="template",
        trigger_id=live.trigger_id,
        trigger_type="wheel_spin",
        created_at=time.time(),
    )
    await kit.producer.send_and_wait(topic(T.FEEDBACK.name), encode(nudge), key=who.encode())
    got = (await board.until(lambda e: e.event == "nudge")).json()
    assert got["message_id"] == nudge_id and got["trigger_id"] == live.trigger_id
    assert got["feedback_classes"] == ["REASSURE"]
    board.close()


async def test_health_and_metrics(kit: Kit) -> None:
    async with kit.http.get(f"{kit.base}/healthz") as response:
        assert response.status == 200
        assert await response.json() == {"status": "ok", "kafka_consumer": True, "database": True, "open_streams": 0}
    who = student()
    stream = await open_stream(kit, who, kit.token(who), last_id=0)
    await kit.store(who, "counted")
    await stream.messages(1)
    async with kit.http.get(f"{kit.base}/v1/students/{who}/stream") as refused:
        assert refused.status == 401
    async with kit.http.get(f"{kit.base}/metrics") as response:
        text = await response.text()
    assert 'vexnudge_gateway_open_streams{kind="student"} 1.0' in text
    assert 'vexnudge_gateway_messages_pushed_total{event="assistant_message"} 1.0' in text
    assert 'vexnudge_gateway_auth_rejected_total{reason="token_missing"} 1.0' in text
    assert "vexnudge_gateway_push_latency_seconds_count 1.0" in text
    stream.close()
