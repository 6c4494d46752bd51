"""``vexnudge gateway``: serve the SSE gateway and the pages (one aiohttp process).

Needs ``TOKEN_SECRET`` and ``ADMIN_TOKEN``; reads ``vex.feedback``,
``vex.triggers`` and ``vex.nudge.outcomes`` with its own group-less consumer,
so any number of gateway processes can run side by side.
"""

from __future__ import annotations

import argparse
import errno
import logging
import sys

from topology.settings import Settings
from vexnudge.cli.messages import kafka_unreachable


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "gateway",
        help="serve the SSE gateway, the student page and the teacher board",
        description="Serve live nudges to students over SSE (resumable with Last-Event-ID), "
        "their questions, the teacher board and the admin tick. "
        "Needs TOKEN_SECRET and ADMIN_TOKEN.",
    )
    parser.add_argument("--host", help="override GATEWAY_HOST")
    parser.add_argument("--port", type=int, help="override GATEWAY_PORT")
    parser.add_argument("--topic-prefix", help="override TOPIC_PREFIX")
    parser.add_argument("-l", "--loglevel", default="info", choices=["debug", "info", "warning", "error"])
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    pairs = {"gateway_host": args.host, "gateway_port": args.port, "topic_prefix": args.topic_prefix}
    settings = settings.model_copy(update={k: v for k, v in pairs.items() if v is not None})
    logging.basicConfig(level=args.loglevel.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
    from delivery.gateway.app import ConfigurationError, secrets_of
    from delivery.gateway.app import run as serve

    try:
        secrets_of(settings)
    except ConfigurationError as exc:
        print(f"vexnudge gateway: {exc}", file=sys.stderr)
        return 2
    from aiokafka.errors import KafkaError

    try:
        serve(settings)
    except KafkaError as exc:
        print(kafka_unreachable("gateway", settings, exc), file=sys.stderr)
        return 1
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            print(
                f"vexnudge gateway: port {settings.gateway_port} on {settings.gateway_host} is already "
                f"taken by another process: {exc}\nStop that process or choose another GATEWAY_PORT "
                "(`--port`).",
                file=sys.stderr,
            )
            return 1
        print(
            f"vexnudge gateway: cannot serve on {settings.gateway_host}:{settings.gateway_port} "
            f"or reach PostgreSQL: {exc}\n"
            "Check GATEWAY_PORT and DATABASE_URL (or start the local stack with `vexnudge stack up`).",
            file=sys.stderr,
        )
        return 1
    return 0
