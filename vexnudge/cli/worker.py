"""``vexnudge worker``: run the stream processors (one Faust worker process)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

from topology.settings import Settings
from vexnudge.cli.messages import kafka_unreachable


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "worker",
        help="run the pipeline's stream processors (ingest, analysis, feedback)",
        description="Run one worker process. Start more processes (each with its own "
        "--web-port and --datadir) to scale out; they share the work by partition.",
    )
    parser.add_argument("--clock", choices=["live", "replay"], help="override CLOCK_MODE")
    parser.add_argument("--web-port", type=int, help="metrics/health port (0 = no web server)")
    parser.add_argument("--datadir", help="Faust data directory (unique per process)")
    parser.add_argument("--app-id", help="override APP_ID (the consumer group)")
    parser.add_argument("--topic-prefix", help="override TOPIC_PREFIX")
    parser.add_argument("--roles", help="override WORKER_ROLES, e.g. stream or feedback,store")
    parser.add_argument("--commit-interval", type=float, help="override BROKER_COMMIT_INTERVAL_S")
    parser.add_argument("--session-timeout", type=float, help="override BROKER_SESSION_TIMEOUT_S")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override any setting, e.g. --set trigger_daemon_enabled=true",
    )
    parser.add_argument("-l", "--loglevel", default="info", choices=["debug", "info", "warning", "error"])
    parser.set_defaults(handler=run)


def overrides(args: argparse.Namespace) -> dict[str, object]:
    """Settings fields set by flags."""
    pairs = {
        "clock_mode": args.clock,
        "worker_web_port": args.web_port,
        "worker_datadir": args.datadir,
        "app_id": args.app_id,
        "topic_prefix": args.topic_prefix,
        "broker_commit_interval_s": args.commit_interval,
        "worker_roles": frozenset(r.strip() for r in args.roles.split(",") if r.strip()) if args.roles else None,
        "broker_session_timeout_s": args.session_timeout,
    }
    return {k: v for k, v in pairs.items() if v is not None}


def with_overrides(settings: Settings, args: argparse.Namespace) -> Settings:
    """The settings with the flags applied (``--set`` values are validated)."""
    extra: dict[str, str] = {}
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep or name.strip().lower() not in Settings.model_fields:
            raise ValueError(f"--set {item!r}: expected FIELD=VALUE with a known settings field")
        extra[name.strip().lower()] = value
    if extra:
        from topology.settings import load_settings

        settings = load_settings(**extra)
    return settings.model_copy(update=overrides(args))


def use_event_loop(kind: str) -> None:
    """Make new event loops (the worker's and its consumer thread's) ``kind`` loops."""
    if kind == "uvloop":
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    else:
        asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())
    asyncio.set_event_loop(asyncio.new_event_loop())


def run(args: argparse.Namespace, settings: Settings) -> int:
    try:
        settings = with_overrides(settings, args)
    except ValueError as exc:
        print(f"vexnudge worker: {exc}", file=sys.stderr)
        return 2
    from topology.seam.check import SeamMismatch, verify_internals

    try:  # the seam's versions and internals, before the broker is reached or the app built
        verify_internals()
    except SeamMismatch as exc:
        print(f"vexnudge worker: {exc}", file=sys.stderr)
        return 2
    from streams.agents.pipeline import build_pipeline
    from topology.kafka_admin import ensure_topics
    from topology.seam.worker import PipelineWorker, tune_collector
    from topology.tablefiles import close_tables, open_tables

    try:
        created = asyncio.run(ensure_topics(settings))
    except Exception as exc:  # noqa: BLE001 - report any broker problem clearly
        print(kafka_unreachable("worker", settings, exc), file=sys.stderr)
        return 1
    if created:
        print(f"vexnudge worker: created {len(created)} topics", file=sys.stderr)
    use_event_loop(settings.worker_event_loop)
    pipeline = build_pipeline(settings)
    tabledir = Path(pipeline.app.conf.tabledir) if settings.worker_store.startswith("rocksdb") else None
    if tabledir is not None and open_tables(tabledir):
        print(
            f"vexnudge worker: the last worker on {settings.worker_datadir} did not stop cleanly; "
            "dropped its RocksDB table files, the tables are rebuilt from their changelogs",
            file=sys.stderr,
        )
    tune_collector(settings.worker_gc_gen0)
    worker = PipelineWorker(
        pipeline.app, loglevel=args.loglevel, redirect_stdouts=False, grace_s=settings.shutdown_grace_s
    )
    try:
        worker.execute_from_commandline()
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 0
    else:
        code = 0
    if tabledir is not None and code == 0:
        close_tables(tabledir)
    # The worker has committed, flushed and left its group by now; leave at once
    # rather than wait on library threads that may outlive the event loop.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
