"""Read-only views of the Faust consumer's offset book-keeping, and the aiokafka
calls that have no public form.

Faust keeps, per partition, the acknowledged offsets not yet committed
(``_acked``), the committed and read offsets, the gaps the log itself lacks
and the messages in flight; none of it is public.  The commit-gap watchdog and
the ``/debug/offsets`` page read it through :func:`partition_offsets` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """One assigned partition's offsets as the consumer holds them now."""

    committed: int | None
    read: int | None
    acked: tuple[int, ...]
    """Acknowledged offsets above the committed one, not yet committed."""
    gaps: Any
    """Faust's gap list of the partition (offsets the log lacks), for :func:`transport.covered`."""
    in_flight: bool
    """A record of the partition is with an agent, not yet acknowledged."""
    paused: bool
    """The partition is paused (a table recovery in progress)."""


def partition_offsets(consumer: Any) -> dict[Any, PartitionOffsets]:
    """Every assigned partition of a Faust consumer with its offsets."""
    acked, committed = consumer._acked, consumer._committed_offset
    read, gaps, paused = consumer._read_offset, consumer._gap, consumer._paused_partitions
    in_flight = {m.tp for m in list(consumer._unacked_messages)}
    return {
        tp: PartitionOffsets(
            committed=committed.get(tp),
            read=read.get(tp),
            acked=tuple(acked.get(tp) or ()),
            gaps=gaps.get(tp),
            in_flight=tp in in_flight,
            paused=tp in paused,
        )
        for tp in consumer.assignment()
    }


async def force_metadata_update(consumer: Any) -> None:
    """Ask an ``AIOKafkaConsumer``'s client for fresh metadata now (a new topic's partitions)."""
    await consumer._client.force_metadata_update()
