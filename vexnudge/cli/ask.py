"""``vexnudge ask``: ask a question as a student, from the command line.

Stores the question (``chat.requests`` and the student's ``chat.messages``
row, both idempotent under the request id), publishes a ``ChatRequest`` to
``vex.chat.requests`` keyed by the student key, and prints the request id.
With ``--wait`` it then polls ``chat.messages`` for the reply to that
request and prints it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from typing import TYPE_CHECKING

from topology.settings import Settings

if TYPE_CHECKING:
    import asyncpg

    from topology.schemas.feedback import ChatRequest

#: Longest question accepted (the gateway's limit too).
MAX_QUESTION_CHARS = 2000
#: Text stored for a question without words (the help button's).
HELP_TEXT = "Help"
POLL_S = 0.25


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "ask",
        help="ask a question as a student and (with --wait) print the reply",
        description="Stores the question, publishes it to vex.chat.requests keyed by the "
        "student, and prints its request id. A running worker answers it.",
    )
    parser.add_argument("student", help="the student's id (as in the telemetry's studentID)")
    parser.add_argument("session", help="the session id, or - for the student's latest session")
    parser.add_argument("text", help="the question (empty: a plain request for help)")
    parser.add_argument("--request-id", help="use this request id (a UUID; default: a new one)")
    parser.add_argument("--wait", action="store_true", help="wait for the reply and print it")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S", help="how long --wait waits (default 60 s)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """The command: 0 asked (and answered with --wait), 1 failure or no reply, 2 usage."""
    text = args.text.strip() or HELP_TEXT
    if len(text) > MAX_QUESTION_CHARS:
        print(f"vexnudge ask: the question is longer than {MAX_QUESTION_CHARS} characters", file=sys.stderr)
        return 2
    try:
        request_id = str(uuid.UUID(args.request_id)) if args.request_id else str(uuid.uuid4())
    except ValueError:
        print(f"vexnudge ask: --request-id {args.request_id!r} is not a UUID", file=sys.stderr)
        return 2
    if not args.student.strip():
        print("vexnudge ask: the student id is empty", file=sys.stderr)
        return 2
    session = None if args.session.strip() in ("", "-") else args.session.strip()
    try:
        return asyncio.run(_run(settings, args.student, session, text, request_id, args.timeout if args.wait else None))
    except (OSError, ConnectionError) as exc:
        print(f"vexnudge ask: failed: {exc}\nIs the stack up? `vexnudge stack status`", file=sys.stderr)
        return 1


async def _run(
    settings: Settings, student: str, session: str | None, text: str, request_id: str, wait_s: float | None
) -> int:
    from delivery.db import open_pool

    async with open_pool(settings, min_size=1, max_size=2) as pool:
        await ask(settings, pool, student, session, text, request_id=request_id)
        print(request_id, flush=True)
        if wait_s is None:
            return 0
        reply = await wait_for_reply(pool, request_id, timeout_s=wait_s)
    if reply is None:
        print(f"vexnudge ask: no reply within {wait_s:g} s (is a worker running?)", file=sys.stderr)
        return 1
    print(reply, flush=True)
    return 0


async def _publishes_nothing(record: object) -> None:
    """Recording a question publishes nothing (the question goes out as a ChatRequest)."""
    raise AssertionError(f"vexnudge ask does not publish {type(record).__name__}")


async def ask(
    settings: Settings, pool: asyncpg.Pool, student: str, session: str | None, text: str, *, request_id: str
) -> ChatRequest:
    """Store the question and publish its :class:`ChatRequest`; returns the request."""
    from aiokafka import AIOKafkaProducer

    from feedback.factory import build_service
    from streams.ingest import student_key
    from topology import topics
    from topology.kafka_admin import ensure_topics
    from topology.schemas.base import encode
    from topology.schemas.feedback import ChatRequest

    key = student_key(student)
    chat = ChatRequest(
        request_id=request_id,
        student_key=key,
        student_id=student.strip(),
        session_id=session,
        text=text,
        ts=time.time(),
        source="cli",
    )
    service = build_service(settings, pool, _publishes_nothing, llm=None)
    await service.record_question(request_id=request_id, student_key=key, session_id=session, text=text)
    topic = settings.topic(topics.CHAT_REQUESTS.name)
    await ensure_topics(settings, [topic])
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers, enable_idempotence=True)
    await producer.start()
    try:
        await producer.send_and_wait(topic, encode(chat), key=key.encode())
    finally:
        await producer.stop()
    return chat


async def wait_for_reply(pool: asyncpg.Pool, request_id: str, *, timeout_s: float) -> str | None:
    """The reply's text once it is stored, or ``None`` after ``timeout_s``."""
    from delivery.repo import messages

    deadline = time.monotonic() + timeout_s
    while True:
        reply = await messages.reply_for_request(pool, request_id)
        if reply is not None:
            return reply.text
        if time.monotonic() >= deadline:
            return None
        await asyncio.sleep(POLL_S)
