"""A worker's local RocksDB table files, kept only across clean stops.

A RocksDB store takes each table write at once, while its changelog record is
still on its way to the broker; a worker killed in between (``kill -9``, out of
memory, power) leaves files holding writes the changelog never got, so a
restart would resume from state whose outputs may be lost.  Kafka Streams
solves this with a checkpoint written only on a clean stop; so do we: the
worker writes :data:`MARKER` beside its tables when it stops cleanly and
removes it when it starts, and a start that finds table files without the
marker drops them, so recovery rebuilds the tables from the changelogs.
The memory store keeps nothing on disk and needs none of this.
"""

from __future__ import annotations

import shutil
from pathlib import Path

MARKER = "clean-stop"


def _marker(tabledir: Path) -> Path:
    return tabledir.parent / MARKER


def open_tables(tabledir: Path) -> bool:
    """Before the worker starts: drop table files an unclean stop left behind.

    :returns: whether files were dropped (the caller says so).
    """
    marker = _marker(tabledir)
    dropped = False
    if tabledir.exists() and any(tabledir.iterdir()) and not marker.exists():
        shutil.rmtree(tabledir)
        dropped = True
    marker.unlink(missing_ok=True)
    return dropped


def close_tables(tabledir: Path) -> None:
    """After a clean stop: the table files match the changelogs."""
    if tabledir.exists():
        _marker(tabledir).touch()
