"""``vexnudge tail``: print a topic's records as JSON lines (for analysts)."""

from __future__ import annotations

import argparse
import asyncio
import sys

import orjson

from topology.settings import Settings
from topology.topics import ALL_TOPICS


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    names = ", ".join(spec.name for spec in ALL_TOPICS)
    parser = subparsers.add_parser(
        "tail", help="print a topic's records as JSON lines",
        description=f"Topics: {names}. Follows new records until interrupted.",
    )
    parser.add_argument("topic", help="logical topic name, e.g. vex.triggers")
    parser.add_argument("--from-beginning", action="store_true", help="start at the oldest record")
    parser.add_argument("--student", help="only records of this student (key, case-insensitive)")
    parser.add_argument("--until-end", action="store_true", help="stop at the current end instead of following")
    parser.set_defaults(handler=run)


def render(key: bytes | None, value: bytes | None, student: str | None) -> bytes | None:
    """The record as one JSON line, or None when filtered out."""
    if student is not None and (key or b"").decode(errors="replace") != student:
        return None
    try:
        return orjson.dumps(orjson.loads(value or b"null"))
    except orjson.JSONDecodeError:
        return orjson.dumps({"key": (key or b"").decode(errors="replace"),
                             "raw": (value or b"").decode(errors="replace")})


async def _tail(settings: Settings, topic: str, args: argparse.Namespace) -> None:
    from aiokafka import AIOKafkaConsumer

    from topology.kafka_admin import read_to_end

    student = args.student.strip().lower() if args.student else None
    out = sys.stdout.buffer
    if args.until_end:
        async for record in read_to_end(settings, [topic], from_beginning=args.from_beginning):
            if (line := render(record.key, record.value, student)) is not None:
                out.write(line + b"\n")
        out.flush()
        return
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=settings.kafka_bootstrap_servers,
                                auto_offset_reset="earliest" if args.from_beginning else "latest")
    await consumer.start()
    try:
        async for record in consumer:
            if (line := render(record.key, record.value, student)) is not None:
                out.write(line + b"\n")
                out.flush()
    finally:
        await consumer.stop()


def run(args: argparse.Namespace, settings: Settings) -> int:
    known = {spec.name for spec in ALL_TOPICS}
    topic = settings.topic(args.topic) if args.topic in known else args.topic
    try:
        asyncio.run(_tail(settings, topic, args))
    except KeyboardInterrupt:
        return 0
    except Exception as exc:  # noqa: BLE001
        print(f"vexnudge tail: {exc}", file=sys.stderr)
        return 1
    return 0
