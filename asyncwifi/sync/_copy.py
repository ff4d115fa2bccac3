"""The engine's copy loop: batches of a feed written with their checkpoints, exactly once,
surviving what goes wrong (:class:`Copier`; :class:`~asyncwifi.sync.Syncer` is the sync
job built on it).

- Every batch is written with its checkpoint in one transaction; a kill at any moment
  loses nothing and doubles nothing (a replayed batch changes no row). Writes are
  pipelined: the next batch is fetched and prepared while the database commits the
  previous one, and event batches load side by side on ``destination.concurrency``
  connections; commits stay in order (a checkpoint never passes rows not yet committed).
- The database unreachable: the batch in hand is kept and its write retried with backoff;
  nothing more is asked of the API meanwhile (the quota is not spent on data that cannot
  be stored).
- ``stop()`` cuts short every wait (:meth:`Copier._unless_stopped`, the one rule): a
  request in backoff or a budget's wait (the fetch of the next batch is cancelled), the
  database's retry backoff (the batch in hand is dropped: its checkpoint was not saved, so
  the next run fetches it again), and the job's sleeps. A transaction in progress is never
  cut: it commits or rolls back.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sys
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from asyncwifi._backoff import retry_while
from asyncwifi._client import Client
from asyncwifi.sync._destination import Destination, DestinationUnavailableError, Write
from asyncwifi.sync._feeds import Batch
from asyncwifi.sync._options import SyncOptions, SyncStats

__all__ = ["Copier", "Stopped", "stoppable"]

log = logging.getLogger("asyncwifi.sync")
T = TypeVar("T")
P = ParamSpec("P")
C = TypeVar("C", bound="Copier")

EVENTS = "events"


class Stopped(Exception):
    """A wait cut short by :meth:`Syncer.stop`; the public methods end quietly on it."""


def stoppable(
    method: Callable[Concatenate[C, P], Coroutine[Any, Any, int]],
) -> Callable[Concatenate[C, P], Coroutine[Any, Any, int]]:
    """A step that a stop ends early (``Stopped``): it returns the rows changed so far,
    once the writes in flight settled."""

    @functools.wraps(method)
    async def run(self: C, /, *args: P.args, **kwargs: P.kwargs) -> int:
        before = self._total()
        try:
            return await method(self, *args, **kwargs)
        except Stopped:
            await self.drain()
            return self._total() - before

    return run


class Copier:
    """Writes feeds' batches into ``destination`` for the organization behind ``api``
    (module docstring); ``on_write(table, rows)`` sees each committed write."""

    def __init__(
        self,
        api: Client,
        destination: Destination,
        *,
        options: SyncOptions | None = None,
        on_write: Callable[[str, int], None] | None = None,
    ) -> None:
        self.api = api
        self.destination = destination.adopt(api.organization)
        self.options = options or SyncOptions()
        self.stats = SyncStats()
        self.on_write = on_write
        self._stopping = asyncio.Event()
        #: destination transactions in flight (shielded from a stop)
        self._writing: set[asyncio.Future[int]] = set()
        #: the writes committing while the next batch is prepared, oldest first
        self._pending: deque[asyncio.Future[int]] = deque()

    # -- the database ----------------------------------------------------------------------
    async def _retrying(self, call: Callable[[], Awaitable[T]], *, read: bool = False) -> T:
        """``call()``, again with backoff (real seconds) while the database is unreachable:
        the one rule for every destination operation of the sync. Once stopping, it is not
        retried (``Stopped``), and a ``read`` (nothing to save) is not even started."""
        if read and self._stopping.is_set():
            raise Stopped
        try:
            result = await retry_while(
                call,
                retry_on=DestinationUnavailableError,
                initial=self.options.retry_initial,
                maximum=self.options.retry_max,
                sleep=lambda s: self._unless_stopped(functools.partial(asyncio.sleep, s)),
                on_failure=self._store_down,
                before_sleep=lambda exc, s: log.warning(
                    "sync: the database is unreachable (%s); retrying in %.1f s", exc, s
                ),
                give_up=self._stopping.is_set,
            )
        except DestinationUnavailableError as exc:  # only through give_up: a stop
            log.warning("sync: the database is unreachable (%s); stopping", exc)
            raise Stopped from exc
        if self.stats.store_down_since is not None:
            log.warning("sync: the database is back")
            self.stats.store_down_since = None
        return result

    def _store_down(self, exc: BaseException) -> None:
        if self.stats.store_down_since is None:
            self.stats.store_down_since = self.api.clock.now()
            self.stats.store_outages += 1

    async def _write(self, write: Write, after: Awaitable[object] | None = None) -> int:
        """Write in one transaction (committed after ``after``), retrying while the
        database is unreachable."""
        written = await self._retrying(lambda: self._transaction(write, after))
        table = write.table
        self.stats.rows[table] = self.stats.rows.get(table, 0) + written
        if self.on_write is not None:
            self.on_write(table, written)
        return written

    async def _transaction(self, write: Write, after: Awaitable[object] | None) -> int:
        """One attempt, shielded: a stop (cancellation) never interrupts a transaction
        half-way on our side (``drain`` waits for it)."""
        writing = asyncio.ensure_future(self.destination.write(write, after))
        self._writing.add(writing)
        try:
            return await asyncio.shield(writing)
        finally:
            if writing.done():
                self._writing.discard(writing)

    async def _until_store(self) -> None:
        """Wait (with backoff) until the database answers: before any API request."""
        await self._retrying(self.destination.open, read=True)

    async def checkpoint(self, name: str) -> str | None:
        """A stored checkpoint, waiting (with backoff) while the database is unreachable."""
        return await self._retrying(lambda: self.destination.checkpoint(name), read=True)

    async def copy(
        self,
        batches: AsyncIterator[Batch[Any]],
        name: str | None,
        each: Callable[[Batch[Any]], object] | None = None,
    ) -> int:
        """The engine's one loop: every batch of a feed written with its checkpoint (saved
        as ``name``) in one transaction, pipelined, until the feed ends or a stop; the rows
        changed. ``each(batch)`` sees each batch before it is written."""
        before = self._total()
        try:
            async for batch in self._until_stopped(batches):
                if each is not None:
                    each(batch)
                await self._apply(batch, name)
        finally:
            await self._flush()
        return self._total() - before

    def _total(self) -> int:
        return sum(self.stats.rows.values())

    async def _flush(self, depth: int = 0) -> None:
        """Wait for the oldest writes until at most ``depth`` are in flight (an error of
        one is raised here)."""
        while len(self._pending) > depth:
            await self._pending.popleft()

    async def _apply(self, batch: Batch[Any], name: str | None) -> None:
        """Prepare the batch's write, then hand it over once the previous one committed."""
        checkpoints = {name: batch.checkpoint} if name and batch.checkpoint else {}
        self.stats.requests[batch.resource] = (
            self.stats.requests.get(batch.resource, 0) + batch.requests
        )
        if batch.late is not None:  # a re-read: what it found was late (``_lookback``)
            self.stats.late_events[batch.late] += len(batch.items)
            self.stats.lookback_requests += batch.requests
        if not (batch.items or batch.bad or checkpoints or batch.complete):
            return  # a re-read that found nothing: no transaction
        self.stats.dead_letters += len(batch.bad)
        for bad in batch.bad:
            log.warning("sync: a %s record set aside (dead letter): %s", batch.resource, bad.error)
        write = Write(
            batch.resource,
            self.destination.rows(batch),
            list(batch.bad),
            None,
            checkpoints,
            batch.requests,
        )
        if batch.complete:
            write.seen = batch.seen
        # events only add rows (ids never repeat between batches): they may load side by
        # side; anything with deletes waits until nothing else is in flight
        depth = self.destination.concurrency if batch.resource == EVENTS else 1
        await self._flush(depth - 1)
        after = asyncio.shield(self._pending[-1]) if self._pending else None
        if after is not None:
            # a write that fails before it waits for ``after`` leaves its error unawaited:
            # it is still "retrieved" (it reaches ``_flush`` through the previous write)
            after.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._pending.append(asyncio.ensure_future(self._write(write, after)))

    async def _unless_stopped(self, wait: Callable[[], Awaitable[T]]) -> T:
        """``await wait()`` unless :meth:`stop` comes first: then it is cancelled (and has
        cleaned up) and ``Stopped`` is raised. The one rule for a stop cutting a wait
        short: around requests and sleeps, never around a transaction."""
        if self._stopping.is_set():
            raise Stopped

        async def waiting() -> T:
            return await wait()

        task = asyncio.ensure_future(waiting())
        stopper = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
            if not task.done():
                task.cancel()
                await asyncio.wait({task})
        if task.cancelled():
            raise Stopped
        return task.result()  # done first: its outcome, even when a stop came meanwhile

    async def _sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` of the client's clock, or less if the sync is stopped."""
        with contextlib.suppress(Stopped):
            await self._unless_stopped(lambda: self.api.clock.sleep(seconds))

    async def _until_stopped(self, batches: AsyncIterator[Batch[Any]]) -> AsyncIterator[Batch[Any]]:
        """``batches`` until a stop is asked: then the feed is closed between transactions
        (the fetch of the next batch is cancelled: a request in backoff, a poll's sleep)."""
        try:
            while True:
                try:
                    batch = await self._unless_stopped(lambda: anext(batches, None))
                except Stopped:
                    return
                if batch is None:
                    return
                yield batch
                if self._stopping.is_set():
                    return
        finally:
            aclose = getattr(batches, "aclose", None)
            if aclose is not None:
                await aclose()

    def stop(self) -> None:
        """End the sync after the transaction in progress (if any)."""
        self._stopping.set()

    @property
    def stopping(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._stopping.is_set()

    async def drain(self) -> None:
        """Wait for the writes in progress to commit (after a cancellation)."""
        pending, self._pending = list(self._pending), deque()
        ended = await asyncio.gather(*pending, return_exceptions=True)
        writing, self._writing = list(self._writing), set()
        ended += await asyncio.gather(*writing, return_exceptions=True)
        # the error already on its way out (and what it came from) is reported by its catcher
        told: set[int] = set()
        stack: list[BaseException | None] = [sys.exception()]
        while stack:
            shown = stack.pop()
            if shown is not None and id(shown) not in told:
                told.add(id(shown))
                stack += [shown.__cause__, shown.__context__]
                stack += getattr(shown, "exceptions", ())  # an exception group's
        for error in {id(e): e for e in ended if isinstance(e, Exception)}.values():
            if id(error) in told:
                continue
            # said, not raised: the stop goes on (a stale pass's write refused by its lease)
            log.warning("sync: a write in progress at the stop failed: %s: %s",
                        type(error).__name__, error)  # fmt: skip
