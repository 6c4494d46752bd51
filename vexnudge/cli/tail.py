"""``vexnudge tail``: print a topic's records as JSON lines (for analysts)."""

from __future__ import annotations

import argparse
import asyncio
import sys

import orjson

from topology.settings import Settings
from topology.topics import ALL_TOPICS
from vexnudge.cli.messages import kafka_unreachable


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    names = ", ".join(spec.name for spec in ALL_TOPICS)
    parser = subparsers.add_parser(
        "tail",
        help="print a topic's records as JSON lines",
        description=f"Topics: {names} (with TOPIC_PREFIX), or any topic on the broker by its full "
        "name. Follows new records until interrupted.",
    )
    parser.add_argument("topic", help="a topic of the pipeline (e.g. vex.triggers) or a full topic name")
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
        return orjson.dumps(
            {"key": (key or b"").decode(errors="replace"), "raw": (value or b"").decode(errors="replace")}
        )


class NoSuchTopic(Exception):
    """The broker has no topic by that name."""


async def resolve(settings: Settings, name: str) -> tuple[str, int]:
    """The broker topic ``name`` stands for (a logical name gets TOPIC_PREFIX) and
    its partition count; :class:`NoSuchTopic` says what exists instead."""
    from topology.kafka_admin import broker_topics, partition_counts

    known = [spec.name for spec in ALL_TOPICS]
    topic = settings.topic(name) if name in known else name
    counts = await partition_counts(settings, [topic])
    if topic in counts:
        return topic, counts[topic]
    where = f"the broker at {settings.kafka_bootstrap_servers}"
    if name not in known:
        raise NoSuchTopic(f"{name!r} is neither a topic of the pipeline ({', '.join(known)}) nor a topic on {where}")
    elsewhere = [t for t in await broker_topics(settings) if t.endswith("." + name)]
    text = f"{where} has no topic {topic!r} (TOPIC_PREFIX={settings.topic_prefix!r})"
    if not elsewhere:
        raise NoSuchTopic(
            f"{text}; nothing was produced under that prefix yet "
            "(start a worker, `vexnudge produce` or `vexnudge demo`)"
        )
    shown = ", ".join(elsewhere[:5]) + (f" and {len(elsewhere) - 5} more" if len(elsewhere) > 5 else "")
    example = elsewhere[-1].removesuffix(name)
    raise NoSuchTopic(
        f"{text}; it exists under other prefixes: {shown}. "
        f"Set TOPIC_PREFIX to read one, e.g. TOPIC_PREFIX={example} vexnudge tail {name}"
    )


async def _tail(settings: Settings, name: str, args: argparse.Namespace) -> None:
    from topology.kafka_admin import consumer_client, read_to_end

    topic, partitions = await resolve(settings, name)
    student = args.student.strip().lower() if args.student else None
    out = sys.stdout.buffer
    if args.until_end:
        async for record in read_to_end(settings, [topic], from_beginning=args.from_beginning, partitions=partitions):
            if (line := render(record.key, record.value, student)) is not None:
                out.write(line + b"\n")
        out.flush()
        return
    reset = "earliest" if args.from_beginning else "latest"
    async with consumer_client(settings, topic, auto_offset_reset=reset) as consumer:
        async for record in consumer:
            if (line := render(record.key, record.value, student)) is not None:
                out.write(line + b"\n")
                out.flush()


def run(args: argparse.Namespace, settings: Settings) -> int:
    from aiokafka.errors import KafkaConnectionError

    try:
        asyncio.run(_tail(settings, args.topic, args))
    except KeyboardInterrupt:
        return 0
    except NoSuchTopic as exc:
        print(f"vexnudge tail: {exc}", file=sys.stderr)
        return 2
    except KafkaConnectionError as exc:
        print(kafka_unreachable("tail", settings, exc), file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001
        print(f"vexnudge tail: {exc}", file=sys.stderr)
        return 1
    return 0
