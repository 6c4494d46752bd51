"""The consumer's hand-over of fetched records to Faust's conductor, without a
race of four tasks per record.

Faust's consumer loop (``Consumer._drain_messages``) runs the conductor's
callback for every record as a task of its own, raced with ``wait_first``
against the flow's suspension (a rebalance) and the consumer's stop or crash:
four tasks, an ``asyncio.wait`` and three cancellations per record, about a
tenth of a stream worker's CPU (docs/performance.md, "Pipeline").  The race
only matters when the callback has to wait — a stream buffer that is full,
flow control that holds the streams — and almost every record goes straight
into its stream's buffer without waiting.

:func:`deliver` therefore runs the callback inline up to its first wait; only
a callback that does wait is wrapped in a task for its remaining steps and
raced exactly as Faust does.  :func:`drain` is Faust's loop (read offsets,
gaps, the commit every N acknowledgements, a yield every 100 records) with
that hand-over.

:class:`RawSchema` is the other half of the hand-over's cost: a channel whose
keys and values stay the bytes on the wire still sends every record through
Faust's codec registry (two look-ups and two no-op decodes per record); this
schema builds the event straight from the record.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any

import faust
from faust.transport.consumer import CONSUMER_FETCHING

#: Records handed over before the loop lets other tasks run (Faust's figure).
YIELD_EVERY = 100


class _Rest:
    """The remaining steps of a coroutine that has already run up to its first
    wait (it yielded ``pending``), as an awaitable a task can drive: each value
    the coroutine yields goes to the task, each wake-up or exception back into
    the coroutine, exactly what ``await`` does."""

    __slots__ = ("step", "pending")

    def __init__(self, step: Coroutine[Any, Any, Any], pending: Any) -> None:
        self.step = step
        self.pending = pending

    def __await__(self) -> Generator[Any, Any, Any]:
        step, pending = self.step, self.pending
        while True:
            try:
                sent = yield pending
            except GeneratorExit:
                step.close()
                raise
            except BaseException as exc:  # noqa: BLE001 - a cancellation or an error for the coroutine
                try:
                    pending = step.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    pending = step.send(sent)
                except StopIteration as done:
                    return done.value


async def deliver(
    callback: Callable[[Any], Coroutine[Any, Any, Any]], message: Any, race: Callable[[Awaitable[Any]], Awaitable[Any]]
) -> None:
    """Run ``callback(message)``: inline if it completes without waiting,
    otherwise its remaining steps as a task handed to ``race`` (which cancels
    it if the race is lost).  An exception of the callback propagates."""
    step = callback(message)
    try:
        pending = step.send(None)
    except StopIteration:
        return
    await race(asyncio.ensure_future(_Rest(step, pending)))


async def drain(consumer: Any, fetcher: Any) -> None:
    """Faust's consumer loop with :func:`deliver` as the hand-over."""
    try:
        await _loop(consumer, fetcher)
    except consumer.consumer_stopped_errors:
        if consumer.transport.app.should_stop:
            consumer.log.info("Broker stopped consumer, shutting down...")
            return
        raise
    except asyncio.CancelledError:
        if consumer.transport.app.should_stop:
            consumer.log.info("Consumer shutting down for user cancel.")
            return
        raise
    except Exception as exc:
        consumer.log.exception("Drain messages raised: %r", exc)
        raise
    finally:
        consumer.diag.unset_flag(CONSUMER_FETCHING)


async def _loop(consumer: Any, fetcher: Any) -> None:
    """The loop of :func:`drain`: fetch, hand over, keep Faust's book-keeping."""
    callback = consumer.callback
    stopped, fetcher_stopped = consumer._stopped.is_set, fetcher._stopped.is_set
    get_read_offset = consumer._read_offset.__getitem__
    set_read_offset = consumer._read_offset.__setitem__
    acks_enabled_for = consumer.app.topics.acks_enabled_for
    commit_every = consumer._commit_every
    suspended = consumer.suspend_flow

    def race(task: Awaitable[Any]) -> Awaitable[Any]:
        return consumer.wait_first(task, suspended.wait())

    since_yield = 0
    while not (stopped() or fetcher_stopped()):
        consumer.diag.set_flag(CONSUMER_FETCHING)
        records = consumer.getmany(timeout=1.0)
        await consumer.sleep(0)  # getmany may return at once, loop after loop
        if consumer.should_stop:
            continue
        async for tp, message in records:
            since_yield += 1
            if since_yield > YIELD_EVERY:
                await asyncio.sleep(0)
                since_yield = 0
            offset = message.offset
            read = get_read_offset(tp)
            if read is not None and offset < read:
                consumer.log.dev("DROPPED MESSAGE ROFF %r: k=%r v=%r", offset, message.key, message.value)
                continue
            if read and offset - read > 1 and acks_enabled_for(message.topic):
                await consumer._add_gap(tp, read + 1, offset)
            if commit_every is not None and consumer._n_acked >= commit_every:
                consumer._n_acked = 0
                await consumer.commit()
            await deliver(callback, message, race)
            set_read_offset(tp, offset)
        consumer.diag.unset_flag(CONSUMER_FETCHING)


class RawSchema(faust.Schema):
    """Keys and values as the bytes on the wire (Faust's ``raw`` serializer),
    without the codec registry: the event is built from the record as is."""

    def __init__(self) -> None:
        super().__init__(key_serializer="raw", value_serializer="raw")

    def compile(
        self,
        app: Any,
        *,
        on_key_decode_error: Any = None,
        on_value_decode_error: Any = None,
        default_propagate: bool = False,
    ) -> Callable[..., Awaitable[Any]]:
        event_type = app.conf.Event

        async def decode(message: Any, *, propagate: bool = default_propagate) -> Any:
            return event_type(app, message.key, message.value, message.headers, message)

        return decode
