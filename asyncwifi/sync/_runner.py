"""The sync itself: feeds into a destination, one pass or a daemon, surviving what goes wrong.

- Every batch is written with its checkpoint in one transaction; a kill at any moment
  loses nothing and doubles nothing (a replayed batch changes no row). Writes are
  pipelined: the next batch is fetched and prepared while the database commits the
  previous one, and event batches load side by side on ``destination.concurrency`` connections;
  commits stay in order (a checkpoint never passes rows not yet committed).
- The database unreachable: the batch in hand is kept and its write retried with backoff;
  nothing more is asked of the API meanwhile (the quota is not spent on data that cannot
  be stored). A pass starts only once the database answers.
- The day's quota spent (``QuotaExhaustedError``): the sync says so, sleeps until the
  reset, and goes on from its checkpoints.
- The daemon follows new events and refreshes contacts, hotspots and segments on a
  schedule; ``stop()`` ends it between transactions.
- It writes the client's organization's rows (``api.organization``): a destination opened
  without one becomes the client's organization's, one for another is refused. A
  ``LeaseLostError`` (another holder took the organization) is never retried: it ends the
  pass or the daemon.
- ``stop()`` also cuts short every wait (:meth:`Syncer._unless_stopped`, the one rule): a
  request in backoff or the budget's wait for the next day (the fetch of the next batch
  is cancelled), the database's retry backoff (the batch in hand is dropped: its
  checkpoint was not saved, so the next run fetches it again), the quota's and the
  daemon's sleeps. A transaction in progress is never cut: it commits or rolls back.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sys
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from datetime import UTC, datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

from asyncwifi._backoff import retry_while
from asyncwifi._client import Client
from asyncwifi._instant import format_instant
from asyncwifi.errors import QuotaExhaustedError
from asyncwifi.sync._budget import Budget
from asyncwifi.sync._destination import Destination, DestinationUnavailableError, Write
from asyncwifi.sync._feeds import Batch, EventFeed
from asyncwifi.sync._options import FIRST_RUN, SyncOptions, SyncStats
from asyncwifi.sync._snapshots import ContactFeed, snapshot

__all__ = ["SyncOptions", "SyncStats", "Syncer"]

log = logging.getLogger("asyncwifi.sync")
T = TypeVar("T")
P = ParamSpec("P")

EVENTS = "events"
CONTACTS = "contacts"
RECONCILED = "contacts.reconciled_at"


class _Stopped(Exception):
    """A wait cut short by :meth:`Syncer.stop`; the public methods end quietly on it."""


def _stoppable(
    method: Callable[Concatenate[Syncer, P], Coroutine[Any, Any, int]],
) -> Callable[Concatenate[Syncer, P], Coroutine[Any, Any, int]]:
    """A step that a stop ends early (``_Stopped``): it returns the rows changed so far,
    once the writes in flight settled."""

    @functools.wraps(method)
    async def run(self: Syncer, /, *args: P.args, **kwargs: P.kwargs) -> int:
        before = self._total()
        try:
            return await method(self, *args, **kwargs)
        except _Stopped:
            await self.drain()
            return self._total() - before

    return run


class Syncer:
    """Keeps ``destination`` in step with the organization behind ``api`` (module docstring)."""

    def __init__(
        self,
        api: Client,
        destination: Destination,
        *,
        options: SyncOptions | None = None,
        budget: Budget | None = None,
        on_write: Callable[[str, int], None] | None = None,
    ) -> None:
        self.api = api
        self.destination = destination.adopt(api.organization)
        self.options = options or SyncOptions()
        self.budget = budget
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
        retried (``_Stopped``), and a ``read`` (nothing to save) is not even started."""
        if read and self._stopping.is_set():
            raise _Stopped
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
            raise _Stopped from exc
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

    # -- the resources -------------------------------------------------------------------
    @_stoppable
    async def sync_events(self, *, follow: bool = False) -> int:
        """Events from the checkpoint (else ``since``) to ``until`` (or now, or forever)."""
        opts = self.options
        checkpoint = await self.checkpoint(EVENTS)
        now = datetime.fromtimestamp(self.api.clock.now(), UTC)
        since = opts.since or (opts.until or now) - FIRST_RUN
        feed = EventFeed(
            self.api,
            checkpoint=checkpoint,
            since=since,
            until=opts.until,
            follow=follow,
            poll_interval=opts.poll_interval,
            settle=opts.settle,
            page_size=opts.page_size,
            budget=self.budget,
            lookback=opts.lookback,
            stored=lambda ids: self._retrying(
                lambda: self.destination.existing(EVENTS, ids), read=True
            ),
        )

        def newest(_: Batch[Any]) -> None:
            if feed.newest is not None:
                self.stats.newest_event = feed.newest

        return await self.copy(feed.__aiter__(), EVENTS, newest)

    @_stoppable
    async def sync_contacts(self, *, reconcile: bool | None = None) -> int:
        """Contacts changed since the checkpoint; a full scan (and deletes) when due, or
        when the server ignores the modified-date filter."""
        opts = self.options
        feed = ContactFeed(
            self.api,
            checkpoint=await self.checkpoint(CONTACTS),
            modified_from=opts.modified_from,
            modified_to=opts.modified_to,
            budget=self.budget,
        )
        before = self._total()
        await self.copy(feed.changes(), CONTACTS)
        if reconcile is None:
            last = await self.checkpoint(RECONCILED)
            now = self.api.clock.now()
            reconcile = last is None or now - float(last) >= opts.reconcile_every
        if (reconcile or not feed.incremental) and not self._stopping.is_set():

            def stamp(batch: Batch[Any]) -> None:
                if batch.complete:  # when the full scan was done
                    batch.checkpoint = repr(self.api.clock.now())

            await self.copy(feed.scan(), RECONCILED, stamp)
        return self._total() - before

    @_stoppable
    async def sync_snapshot(self, resource: str) -> int:
        """Hotspots or segments: the whole list, deletes included."""
        batch = await self._unless_stopped(
            lambda: snapshot(self.api, resource, budget=self.budget)  # type: ignore[arg-type]
        )
        before = self._total()
        await self._apply(batch, None)
        await self._flush()
        return self._total() - before

    # -- passes ----------------------------------------------------------------------------
    @_stoppable
    async def run_once(self) -> int:
        """One pass over every resource; returns the rows changed."""
        await self._until_store()
        written = 0
        written += await self._quota_safe(self.sync_events)
        for step in (self.sync_contacts, self._hotspots, self._segments):
            if self._stopping.is_set():
                break
            written += await self._quota_safe(step)
        self.stats.passes += 1
        self.stats.last_success = self.api.clock.now()
        return written

    async def _hotspots(self) -> int:
        return await self.sync_snapshot("hotspots")

    async def _segments(self) -> int:
        return await self.sync_snapshot("segments")

    async def run_forever(self) -> None:
        """Follow events and refresh the rest every ``refresh_every`` until :meth:`stop`."""
        try:
            await self._until_store()
        except _Stopped:
            return
        events = asyncio.create_task(self._quota_safe(lambda: self.sync_events(follow=True)))
        try:
            while not self._stopping.is_set():
                for step in (self.sync_contacts, self._hotspots, self._segments):
                    if self._stopping.is_set():
                        break
                    await self._quota_safe(step)
                self.stats.passes += 1
                self.stats.last_success = self.api.clock.now()
                await self._sleep(self.options.refresh_every)
                if events.done():
                    events.result()  # a failure of the event follower ends the daemon
        finally:
            events.cancel()
            await asyncio.gather(events, return_exceptions=True)
            await self.drain()

    async def _quota_safe(self, step: Callable[[], Any]) -> int:
        """Run ``step``; when the day's quota is spent, sleep until the reset and rerun it
        (from the checkpoints it saved)."""
        while True:
            try:
                result: int = await step()
                return result
            except QuotaExhaustedError as exc:
                # until the day's figure is fully back, not the first free slot: a step
                # restarted on one request would spend it and stop again
                day = self.api.quota.day
                full = day.reset_at if day is not None and day.reset_at is not None else 0.0
                reset = max(exc.reset_at, full)
                self.stats.quota_sleeps += 1
                log.warning(
                    "sync: the day's quota is spent; sleeping until %s, then resuming",
                    format_instant(reset, "seconds"),
                )
                await self._sleep(max(0.0, reset - self.api.clock.now()))
                if self._stopping.is_set():
                    return 0

    async def _unless_stopped(self, wait: Callable[[], Awaitable[T]]) -> T:
        """``await wait()`` unless :meth:`stop` comes first: then it is cancelled (and has
        cleaned up) and ``_Stopped`` is raised. The one rule for a stop cutting a wait
        short: around requests and sleeps, never around a transaction."""
        if self._stopping.is_set():
            raise _Stopped

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
            raise _Stopped
        return task.result()  # done first: its outcome, even when a stop came meanwhile

    async def _sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` of the client's clock, or less if the sync is stopped."""
        with contextlib.suppress(_Stopped):
            await self._unless_stopped(lambda: self.api.clock.sleep(seconds))

    async def _until_stopped(self, batches: AsyncIterator[Batch[Any]]) -> AsyncIterator[Batch[Any]]:
        """``batches`` until a stop is asked: then the feed is closed between transactions
        (the fetch of the next batch is cancelled: a request in backoff, a poll's sleep)."""
        try:
            while True:
                try:
                    batch = await self._unless_stopped(lambda: anext(batches, None))
                except _Stopped:
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
