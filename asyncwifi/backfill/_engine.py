"""The export engine: slices streamed concurrently, pages committed exactly once.

Each page goes to one committer (so that pages of concurrent slices never interleave inside
the file), which takes every page queued meanwhile as a group: it chooses the records to
write (:mod:`._records`), appends them to the output, fsyncs once, then commits the new
length and, per page, the slice's cursor and the page's ids in one SQLite transaction
(:mod:`._state`). The file I/O and the commit run in a worker thread, so the event loop
keeps every scroll alive meanwhile; a worker cancelled after its page was taken waits for
that commit, so a commit is never half done, and a failed one is cut back from the file.

On start the output is truncated to the committed length and every unfinished slice is
streamed again with ``skip_ids`` = the ids it already delivered (and, when the slice's
records came in date order, ``dateStart`` narrowed to its cursor), so a kill at any moment
costs at most the pages in flight and never writes a record twice.

When the day's quota is spent (:class:`~asyncwifi.errors.QuotaExhaustedError`, the client
being configured to raise), everything committed stays committed; the engine then either
sleeps until the reset (``wait=True``) or returns a ``paused`` outcome for the caller to
exit with a distinct status.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sqlite3
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from asyncwifi._clock import Clock
from asyncwifi._instant import MS, floor_ms, format_instant, read_instant
from asyncwifi._sqlite import SqliteThread
from asyncwifi.backfill._commit import (
    Pending,
    attributes,
    commit_batch,
    event_date,
    with_undecoded,
)
from asyncwifi.backfill._contract import (
    JobOutcome,
    OpenStream,
    Progress,
    Reporter,
    StreamRequest,
    remaining_requests,
)
from asyncwifi.backfill._errors import SliceIncompleteError
from asyncwifi.backfill._plan import Slice
from asyncwifi.backfill._records import Boundaries
from asyncwifi.backfill._sink import JsonlOutput, RawRecord
from asyncwifi.backfill._state import JobParams, SliceState, StateStore
from asyncwifi.errors import (
    ClientStateError,
    ConfigurationError,
    QuotaExhaustedError,
    ScrollExpiredError,
)
from asyncwifi.models._identity import record_ids

__all__ = ["ExportJob"]

T = TypeVar("T")

#: a scroll that lapses this many times in a row without committing anything is an error
MAX_EXPIRIES = 5
#: clock seconds added to a quota reset before trying again (the counters are approximate)
RESET_MARGIN = 1.0


# -- the job ----------------------------------------------------------------------------------


class ExportJob:
    """One resumable export: a plan of slices, a state file and an output file.

    Records are named by the one rule of ``asyncwifi.models._identity`` (the engine never
    writes one id twice); ``date_of(item)`` gives its date for cursors and boundary checks
    (``None`` for records without dates, such as contacts). ``page_size`` is the size asked
    of the server: a slice whose last page was full is checked once more from its cursor,
    since a lapsed scroll answers like the end (spec §3). ``wait`` sleeps through a spent day
    quota (at most ``max_wait`` seconds) instead of returning ``paused``.
    """

    def __init__(
        self,
        *,
        params: JobParams,
        slices: Sequence[Slice],
        state_path: Path,
        out_path: Path,
        open_stream: OpenStream,
        clock: Clock,
        date_of: Callable[[Any], object] | None = None,
        reporter: Reporter | None = None,
        concurrency: int = 1,
        wait: bool = False,
        max_wait: float | None = None,
        fsync: bool = True,
        compresslevel: int = 6,
        page_size: int | None = None,
    ) -> None:
        if concurrency < 1:
            raise ConfigurationError("concurrency must be at least 1")
        self.params = params
        self.plan = list(slices)
        self.state_path = state_path
        self.out_path = out_path
        self._open_stream = open_stream
        self.clock = clock
        self._date_of = date_of
        self.reporter = reporter or Reporter()
        self.concurrency = concurrency
        self.wait = wait
        self.max_wait = max_wait
        self._fsync = fsync
        #: the page size asked of the server: a full last page makes an end only probable
        self.page_size = page_size
        self._compresslevel = compresslevel
        self._store: StateStore | None = None
        #: the state's connection on its own thread (the shared asyncio-to-SQLite bridge):
        #: every read and commit of the state, one at a time
        self._bridge: SqliteThread | None = None
        #: the slices of the current round, updated as pages commit
        self._states: list[SliceState] = []
        #: pages waiting for the committer, and the committer task (group commit)
        self._queue: list[Pending] = []
        self._committer: asyncio.Future[None] | None = None
        self._sink: JsonlOutput | None = None
        self.progress = Progress()
        self._boundary_moments = [s.start for s in self.plan[1:]] if date_of else []

    # -- lifecycle ---------------------------------------------------------------------------

    async def _open(self) -> bool:
        """Open (or create) the state and the output. Returns whether it was a resume.

        Files this call creates are removed again if opening fails, so that a refused job
        leaves nothing behind.
        """
        created: list[Path] = []
        state_existed = StateStore.exists(self.state_path)
        try:
            if not self.state_path.exists():
                created.append(self.state_path)

            def connect() -> sqlite3.Connection:
                # on the bridge's thread, which then owns the connection
                self._store, _ = StateStore.open(self.state_path, self.params, slices=self.plan)
                return self._store.connection

            self._bridge = SqliteThread(connect, name="asyncwifi-backfill-state")
            await self._bridge.start()
            store = self._require_store()
            if not self.out_path.exists():
                created.append(self.out_path)
            sink = JsonlOutput(
                self.out_path,
                gzip=self.params.gzip,
                compresslevel=self._compresslevel,
                fsync=self._fsync,
            )
            sink.open(store.offset)
            self._sink = sink
        except BaseException:
            await self._close()
            _remove(created)
            raise
        return state_existed

    async def _close(self) -> None:
        if self._sink is not None:
            self._sink.close()
            self._sink = None
        bridge, self._bridge = self._bridge, None
        if bridge is not None:
            await bridge.close()  # closes the state's connection on its thread
        self._store = None

    async def run(self) -> JobOutcome:
        """Run until every slice is done, or until the quota pauses the job (see ``wait``)."""
        resumed = await self._open()
        try:
            store = self._require_store()
            self.progress = Progress(
                slices_total=len(self.plan),
                records=store.records,
                requests_total=store.requests,
                started_at=self.clock.now(),
            )
            self._refresh_slices()
            self.reporter.started(self.progress, resumed=resumed)
            while True:
                if store.done:
                    self.reporter.finished(self.progress)
                    return JobOutcome("done", self.progress)
                reset_at = await self._round()
                if reset_at is None:
                    await self._locked(store.mark_done)
                    self.reporter.finished(self.progress)
                    return JobOutcome("done", self.progress)
                delay = reset_at - self.clock.now()
                waiting = self.wait and (self.max_wait is None or delay <= self.max_wait)
                self.reporter.paused(self.progress, reset_at=reset_at, waiting=waiting)
                if not waiting:
                    return JobOutcome("paused", self.progress, reset_at)
                await self.clock.sleep(max(0.0, delay) + RESET_MARGIN)
                self.reporter.resumed(self.progress)
        finally:
            await self._settle()
            await self._close()

    async def _settle(self) -> None:
        """Let a commit in progress finish before the files close (even when cancelled)."""
        committer = self._committer
        self._queue.clear()
        if committer is not None and not committer.done():
            with contextlib.suppress(BaseException):
                await asyncio.shield(committer)
            if not committer.done():  # we were cancelled again: wait without awaiting
                await asyncio.wait([committer])
        if committer is not None and committer.done() and not committer.cancelled():
            committer.exception()  # retrieved: it reached its callers already

    def _require_store(self) -> StateStore:
        if self._store is None:
            raise ClientStateError("the job is not open")
        return self._store

    def _refresh_slices(self) -> list[SliceState]:
        states = self._require_store().slices()
        self._states = states
        self.progress.slices_done = sum(1 for s in states if s.done)
        self.progress.remaining_requests = remaining_requests(states)
        return states

    async def _round(self) -> float | None:
        """Stream every unfinished slice; the quota's reset time if it ran out, else None."""
        pending = deque(s for s in self._refresh_slices() if not s.done)
        resets: list[float] = []
        async with asyncio.TaskGroup() as group:
            for _ in range(min(self.concurrency, len(pending))):
                group.create_task(self._worker(pending, resets))
        return max(resets) if resets else None

    async def _worker(self, pending: deque[SliceState], resets: list[float]) -> None:
        """Stream slices until none is left or the day's quota is spent. A spent quota
        stops this worker only: the others are not cancelled, so the pages they already
        fetched (paid for) are committed before their own next request is refused."""
        while pending and not resets:
            try:
                await self._run_slice(pending.popleft())
            except QuotaExhaustedError as exc:
                resets.append(exc.reset_at)
                return

    # -- one slice ---------------------------------------------------------------------------

    async def _run_slice(self, state: SliceState) -> None:
        """Stream one slice to its end and commit it. The stream owns the scroll's rules
        (lapses, resumes, proving an ambiguous end: see ``asyncwifi._scroll_state``); a
        stream that cannot go on raises, the slice stays unfinished with its progress
        committed, and it is streamed again from its checkpoint (at most ``MAX_EXPIRIES``
        times in a row without a committed record) before the job fails."""
        store = self._require_store()
        seen: set[str] = await self._locked(lambda: store.delivered_ids(state.index))
        boundaries = Boundaries.around(
            [m for m in self._boundary_moments if m in (state.start, state.end)]
        )
        expiries = 0
        uncounted = 0  # requests that committed no page (an empty or proving page)
        while True:
            request = self._request_for(state, seen)
            stream = self._open_stream(request)
            counted = 0
            try:
                async for page in stream.pages():
                    used = stream.requests - counted
                    counted += used
                    if await self._commit_page(state, seen, boundaries, page, used):
                        expiries = 0
                break
            except ScrollExpiredError as exc:
                # everything delivered is committed; open the slice again from there
                expiries += 1
                if expiries >= MAX_EXPIRIES:
                    raise SliceIncompleteError(
                        f"slice {state.index} ({state.slice.date_start} .. "
                        f"{state.slice.date_end}) cannot be proved complete: {exc} "
                        f"({state.records:,} records of it are saved; run again to resume)"
                    ) from exc
            finally:
                self.progress.requests_run += stream.requests - counted
                uncounted += stream.requests - counted
                self.progress.verifications_run += int(getattr(stream, "resumes", 0) or 0)
                await stream.aclose()
        await self._locked(lambda: store.finish_slice(state.index, requests=uncounted))
        state.done = True
        progress = self.progress
        progress.slices_done += 1
        progress.requests_total += uncounted
        progress.remaining_requests = remaining_requests(self._states)
        self.reporter.slice_done(progress, slice_index=state.index)

    def _request_for(self, state: SliceState, seen: set[str]) -> StreamRequest:
        piece = state.slice
        date_start = piece.date_start
        resume = bool(seen) or state.pages > 0
        if state.ordered and state.cursor is not None and seen:
            # the slice's records came in date order (sortBy=utcTime): what is left is dated
            # at or after the cursor; dateStart is inclusive, so records at the cursor's
            # millisecond come again and are skipped by id
            cursor = floor_ms(read_instant(state.cursor))
            if piece.start < cursor <= piece.end - MS:
                date_start = format_instant(cursor)
        return StreamRequest(
            slice=piece,
            date_start=date_start,
            date_end=piece.date_end,
            skip_ids=frozenset(seen),
            resume=resume,
        )

    async def _commit_page(
        self,
        state: SliceState,
        seen: set[str],
        boundaries: Boundaries,
        page: Any,
        requests: int,
    ) -> int:
        """Write and commit one page; returns how many records it added."""
        items: Sequence[Any] = page.items or ()
        raws: Sequence[RawRecord] | None = getattr(page, "raw_items", None)
        if raws is None or len(raws) != len(items):
            raise ClientStateError(
                "the stream must be opened with keep_raw=True (one raw record per item)"
            )
        errors = getattr(page, "errors", None)
        if errors:
            items, raws = with_undecoded(items, raws, errors)
            self.progress.undecoded_run += len(errors)
        ids = record_ids(items, raws)
        date_of = self._date_of
        if date_of is None:
            dates = None
        else:
            dates = attributes(items, "time_text") if date_of is event_date else None
            if dates is None:
                dates = [date_of(item) for item in items]
        item = Pending(state, seen, boundaries, ids, dates, raws, requests)
        added = await self._group_commit(item)
        self.reporter.page(self.progress, slice_index=state.index, records=added)
        return added

    async def _group_commit(self, item: Pending) -> int:
        """Queue a page for the committer; pages queued meanwhile share one fsync.

        A caller cancelled before its page was taken withdraws it; once taken, the page is
        committed (or rolled back) whatever happens to the caller, who waits for that.
        """
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        # an error nobody awaits any more (a cancelled caller) is still "retrieved"
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        item.future = future
        self._queue.append(item)
        if self._committer is None or self._committer.done():
            self._committer = asyncio.ensure_future(self._commit_loop())
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            if item in self._queue:
                self._queue.remove(item)
                future.cancel()
            elif not future.done():
                await asyncio.wait([future])
            raise

    async def _commit_loop(self) -> None:
        """Commit whatever is queued, batch after batch, on the state's thread."""
        while self._queue:
            batch, self._queue = self._queue, []
            try:
                added = await self._locked(functools.partial(self._commit_batch, batch))
            except BaseException as exc:
                for item in batch:
                    if item.future is not None and not item.future.done():
                        item.future.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise
                continue
            for item, count in zip(batch, added, strict=True):
                if item.future is not None and not item.future.done():
                    item.future.set_result(count)

    def _commit_batch(self, batch: Sequence[Pending]) -> list[int]:
        """Write the pages, fsync once, commit them in one transaction (state's thread)."""
        store = self._require_store()
        if self._sink is None:
            raise ClientStateError("the job is not open")
        return commit_batch(store, self._sink, batch, self.progress)

    async def _locked(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the state's thread, after what was queued before it; once queued it
        always completes, and a cancelled caller still waits for it."""
        if self._bridge is None:
            raise ClientStateError("the job is not open")
        future = self._bridge.submit(lambda _conn: fn())
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            if not future.done():
                await asyncio.wait([future])
            raise


def _remove(created: Sequence[Path]) -> None:
    """Remove the files a refused job created (and SQLite's companions of the state)."""
    for path in created:
        for extra in ("", "-wal", "-shm"):
            Path(f"{path}{extra}").unlink(missing_ok=True)
