"""The engine's copy loop: batches of a feed written with their checkpoints, exactly once,
surviving what goes wrong (:class:`Copier`, its :class:`CopyOptions` and :class:`CopyStats`;
:class:`~asyncwifi.sync.Syncer` is the sync job built on it, the backfill's ``ExportJob``
runs its parts through one).

- Every batch is written with its checkpoint in one transaction; a kill at any moment
  loses nothing and doubles nothing (a replayed batch changes no row). Writes are
  pipelined: the next batch is fetched and prepared while the database commits the
  previous one, and event batches load side by side on ``destination.concurrency``
  connections; commits stay in order (a checkpoint never passes rows not yet committed).
- The database unreachable: the batch in hand is kept and its write retried with backoff;
  nothing more is asked of the API meanwhile (the quota is not spent on data that cannot
  be stored). A full disk is not an outage (:class:`DestinationFullError`): with
  ``options.wait_for_space`` the copier waits for space the same way, saying so once a
  minute, and says when it resumes; without, the error ends it. A database that cannot be
  written at all (``DestinationNotWritableError``) is never retried.
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
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from asyncwifi._client import Client
from asyncwifi._defaults import RETRY_INITIAL, RETRY_MAX
from asyncwifi._retry import retry_while
from asyncwifi.engine._destination import (
    Destination,
    DestinationFullError,
    DestinationUnavailableError,
    Write,
)
from asyncwifi.engine._erasure import Suppression
from asyncwifi.engine._feeds import BadRecord, Batch
from asyncwifi.engine._guard import MASS_DELETE_ROWS, MASS_DELETE_SHARE, DeleteGuard
from asyncwifi.engine._heap import unmap_large_buffers
from asyncwifi.engine._pii import PiiPolicy
from asyncwifi.engine._retention import check_retention, recent_rows
from asyncwifi.engine._room import PageRoom
from asyncwifi.engine._schema import TABLES
from asyncwifi.engine._stop import Stopped, StopSwitch, stoppable
from asyncwifi.errors import ValidationError

__all__ = ["EVENTS", "Copier", "CopyOptions", "CopyStats", "Stopped", "stoppable"]

log = logging.getLogger("asyncwifi.sync")
T = TypeVar("T")
P = ParamSpec("P")
C = TypeVar("C", bound="Copier")

EVENTS = "events"
#: real seconds between two lines of a sync waiting for space
FULL_EVERY = 60.0


def _what_is_wrong(exc: BaseException) -> str:
    if isinstance(exc, DestinationFullError):
        return str(exc)
    return f"the database is unreachable ({exc})"


@dataclass
class CopyOptions:
    """How the copy loop rides out a destination that fails (real seconds)."""

    #: the first and longest wait before retrying an unreachable database
    retry_initial: float = RETRY_INITIAL
    retry_max: float = RETRY_MAX
    #: a full disk (``DestinationFullError``): wait for space, saying so once a minute (a
    #: daemon), or end with the error (False: one pass, ``asyncwifi sync --once``)
    wait_for_space: bool = True
    #: the mass-delete guard (``_guard``): a complete read that would retire more than
    #: max(``mass_delete_rows``, ``mass_delete_share`` of the live rows) withholds its
    #: deletes; ``allow_mass_delete`` accepts one such read (the first)
    mass_delete_rows: int = MASS_DELETE_ROWS
    mass_delete_share: float = MASS_DELETE_SHARE
    allow_mass_delete: bool = False
    #: the PII policy applied to every row and dead letter before it lands (``_pii``)
    pii: PiiPolicy | None = None
    #: what a delete the sync infers does: ``soft`` (``deleted_at``) or ``purge`` (the row
    #: removed; SQLite's ``secure_delete`` zeroes its bytes)
    on_delete: str = "soft"
    #: local retention (``_retention``): rows older than this (seconds; None: kept) purged
    retention: float | None = None
    retention_by: str = "activity"
    #: at most this many batches fetched and not yet committed, across every feed the
    #: copier runs (``_room``; None: the pipeline's own depth, per feed)
    pages_in_memory: int | None = None

    def __post_init__(self) -> None:
        if self.pages_in_memory is not None:
            PageRoom(self.pages_in_memory)  # checked here, not at the first page
        DeleteGuard(self.mass_delete_rows, self.mass_delete_share)  # the thresholds checked
        check_retention(self.retention, self.retention_by)
        if self.on_delete not in ("soft", "purge"):
            raise ValidationError(f"on_delete: soft or purge, got {self.on_delete!r}")


@dataclass
class CopyStats:
    """What the copy loop wrote and met (a job's metrics and progress read it)."""

    #: rows changed, by table
    rows: dict[str, int] = field(default_factory=dict)
    dead_letters: int = 0
    #: requests the batches cost, by resource
    requests: dict[str, int] = field(default_factory=dict)
    #: since when the database has been unreachable (clock seconds; None: it answers)
    store_down_since: float | None = None
    #: how many times the database became unreachable
    store_outages: int = 0
    #: late events stored, by what found them: ``lookback``, or ``audit`` (later than the
    #: lookback); and the requests the re-reads spent (within ``requests["events"]``)
    late_events: dict[str, int] = field(default_factory=lambda: {"lookback": 0, "audit": 0})
    lookback_requests: int = 0
    #: deletes the mass-delete guard withholds now, by table (gone once an honest
    #: complete read of the table applies its deletes)
    withheld_deletes: dict[str, int] = field(default_factory=dict)


def _raw(value: object) -> bytes:
    """A JSON Lines row's record bytes."""
    return (
        bytes(value) if isinstance(value, bytes | bytearray | memoryview) else str(value).encode()
    )


class Copier(StopSwitch):
    """Writes feeds' batches into ``destination`` for the organization behind ``api``
    (module docstring): :meth:`copy` is the loop; ``on_write(table, rows)`` sees each
    committed write; :meth:`stop` ends it between transactions."""

    def __init__(
        self,
        api: Client,
        destination: Destination,
        *,
        options: CopyOptions | None = None,
        on_write: Callable[[str, int], None] | None = None,
    ) -> None:
        unmap_large_buffers()  # the pages' bodies leave no heap behind (``_heap``)
        self.api = api
        self.destination = destination.adopt(api.organization)
        self.options = options or CopyOptions()
        self.stats = CopyStats()
        self.on_write = on_write
        pages = self.options.pages_in_memory
        self._room = None if pages is None else PageRoom(pages)
        StopSwitch.__init__(self)
        #: destination transactions in flight (shielded from a stop)
        self._writing: set[asyncio.Future[int]] = set()
        #: the writes committing while the next batch is prepared, oldest first
        self._pending: deque[asyncio.Future[int]] = deque()
        #: the disk is full now: the error (None: not now), and when that was last said
        self._full: DestinationFullError | None = None
        self._full_said: float | None = None
        #: a write the stop dropped because the disk was full (its records are read again
        #: by the next run): the pass it belonged to did not end
        self.full: DestinationFullError | None = None
        #: mass deletes still accepted (``allow_mass_delete``: one)
        self._mass_allowed = int(self.options.allow_mass_delete)
        if self.options.pii is not None and self.options.pii.key:  # erasures' hash key
            self.destination.suppression = Suppression(self.options.pii.key)

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
                before_sleep=self._say_waiting,
                give_up=lambda: self._stopping.is_set() or self._ends_here(),
            )
        except DestinationUnavailableError as exc:  # through give_up: a stop, or a full disk
            if self._ends_here():
                raise
            if isinstance(exc, DestinationFullError):
                self.full = exc
            log.warning("sync: %s; stopping", _what_is_wrong(exc))
            raise Stopped from exc
        except Stopped:  # the stop came while it slept between two tries
            if self._full is not None:
                self.full = self._full  # the write waiting for space is dropped
            raise
        if read and self._full is not None:
            return result  # a full disk still reads: only a write proves there is room
        if self.stats.store_down_since is not None:
            back = "there is space again" if self._full else "the database is back"
            log.warning("sync: %s; resuming", back)
            self.stats.store_down_since = None
        self._full = None
        return result

    def _ends_here(self) -> bool:
        """A full disk ends a sync that does not wait for space."""
        return self._full is not None and not self.options.wait_for_space

    def _store_down(self, exc: BaseException) -> None:
        self._full = exc if isinstance(exc, DestinationFullError) else None
        if self.stats.store_down_since is None:
            self.stats.store_down_since = self.api.clock.now()
            self.stats.store_outages += 1

    def _say_waiting(self, exc: BaseException, wait: float) -> None:
        """An outage, each retry; a full disk, once a minute (its wait may be long)."""
        if not isinstance(exc, DestinationFullError):
            log.warning("sync: %s; retrying in %.1f s", _what_is_wrong(exc), wait)
            return
        now = asyncio.get_running_loop().time()
        if self._full_said is None or now - self._full_said >= FULL_EVERY:
            log.warning("sync: %s; waiting for space (said once a minute)", exc)
            self._full_said = now

    async def _write(self, write: Write, after: Awaitable[object] | None = None) -> int:
        """Write in one transaction (committed after ``after``), retrying while the
        database is unreachable."""
        write.purge = self.options.on_delete == "purge"
        written = await self._retrying(lambda: self._transaction(write, after))
        table = write.table
        self.stats.rows[table] = self.stats.rows.get(table, 0) + written
        if write.seen is not None:
            self._guarded(write)
        if self.on_write is not None:
            self.on_write(table, written)
        return written

    def _guarded(self, write: Write) -> None:
        """Say what the mass-delete guard did with a committed complete read's deletes."""
        table, withheld = write.table, self.stats.withheld_deletes
        if write.withheld:
            withheld[table] = write.withheld
            log.warning(
                "sync: a complete read of %s would retire %d live rows, more than the "
                "mass-delete guard allows: deletes withheld, upserts applied (if they are "
                "real, run once with --allow-mass-delete)", table, write.withheld,
            )  # fmt: skip
            return
        withheld.pop(table, None)
        if write.mass:
            self._mass_allowed -= 1
            log.warning("sync: a mass delete of %s accepted (--allow-mass-delete)", table)

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

    async def save(self, checkpoints: dict[str, str], table: str = EVENTS) -> None:
        """Save ``checkpoints`` alone, in one transaction (retried as every write is)."""
        await self._write(Write(table, checkpoints=checkpoints))

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
        before, room = self._total(), self._room
        try:
            async for batch in self._until_stopped(batches, room):
                try:
                    if each is not None:
                        each(batch)
                    write = await self._apply(batch, name)
                except BaseException:
                    if room is not None:
                        room.give()
                    raise
                if room is not None:
                    room.give_after(write)
                del batch, write  # the page is the write's now: gone at its commit
        finally:
            await self._flush()
        return self._total() - before

    def _total(self) -> int:
        return sum(self.stats.rows.values())

    async def _flush(self, depth: int = 0) -> None:
        """Wait for the oldest writes until at most ``depth`` are in flight (an error of
        one is raised here)."""
        pending = self._pending
        while len(pending) > depth:
            oldest = pending[0]
            try:
                # awaited where it stands: it counts as in flight (its page in memory) until
                # it committed, so other slices waiting here cannot add one meanwhile
                await asyncio.shield(oldest)
            finally:
                if oldest.done() and pending and pending[0] is oldest:
                    pending.popleft()

    async def _apply(self, batch: Batch[Any], name: str | None) -> asyncio.Future[int] | None:
        """Prepare the batch's write, then hand it over once the previous one committed; the
        write (None: the batch had nothing to write)."""
        checkpoints = {name: batch.checkpoint} if name and batch.checkpoint else {}
        self.stats.requests[batch.resource] = (
            self.stats.requests.get(batch.resource, 0) + batch.requests
        )
        if batch.late is not None:  # a re-read: what it found was late (``_lookback``)
            self.stats.late_events[batch.late] += len(batch.items)
            self.stats.lookback_requests += batch.requests
        if not (batch.items or batch.bad or checkpoints or batch.complete):
            return None  # a re-read that found nothing: no transaction
        self.stats.dead_letters += len(batch.bad)
        for bad in batch.bad:
            log.warning("sync: a %s record set aside (dead letter): %s", batch.resource, bad.error)
        rows, letters, options = self.destination.rows(batch), list(batch.bad), self.options
        if options.retention is not None and self.destination.dialect != "jsonl":
            names, now = TABLES[batch.resource].names, self.api.clock.now()
            rows = recent_rows(options.retention, options.retention_by, batch.resource, names,
                               rows, now)  # fmt: skip
        pii = options.pii
        if pii and self.destination.dialect == "jsonl":  # (id, bytes) lines, bad ones too
            rows = [(row[0], pii.scrub(_raw(row[1]))) for row in rows]
        elif pii:  # a table's rows: typed columns and raw; dead letters
            rows = pii.rows(TABLES[batch.resource].names, rows)
            letters = [BadRecord(pii.scrub(b.raw), b.error, b.id) for b in letters]
        write = Write(batch.resource, rows, letters, None, checkpoints, batch.requests)
        if batch.complete:
            write.seen = batch.seen
        # events only add rows (ids never repeat between batches): they may load side by
        # side; anything with deletes waits until nothing else is in flight
        depth = self.destination.concurrency if batch.resource == EVENTS else 1
        await self._flush(depth - 1)
        if write.seen is not None:  # after the writes before it: one allowance, used once
            options, allow = self.options, self._mass_allowed > 0
            write.guard = DeleteGuard(options.mass_delete_rows, options.mass_delete_share, allow)
        after = asyncio.shield(self._pending[-1]) if self._pending else None
        if after is not None:
            # a write that fails before it waits for ``after`` leaves its error unawaited:
            # it is still "retrieved" (it reaches ``_flush`` through the previous write)
            after.add_done_callback(lambda f: f.cancelled() or f.exception())
        written = asyncio.ensure_future(self._write(write, after))
        self._pending.append(written)
        return written

    async def _sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` of the client's clock, or less if the sync is stopped."""
        with contextlib.suppress(Stopped):
            await self._unless_stopped(lambda: self.api.clock.sleep(seconds))

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
