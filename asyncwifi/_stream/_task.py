"""A scroll stream's background task: the I/O around the sans-I/O ScrollMachine.

It fetches a page, hands the outcome to the machine and does what it decides; it paces
itself on the window (spec §3), not on the consumer: past ``max_buffered`` pages in memory,
pages go to the spill file (:class:`~asyncwifi._stream._pages.Spill`) until its budget is spent.
A fetch (and its decoding, which is pure) may be retried; what a page changes (the cursor,
the spill file, the counters, the queue) happens once, after the attempt that succeeded.

spec §8: a page's objects are reserved before it is asked for (``ObjectGate.reserve``), and
a fresh query asks for no more than the month's allowance leaves. A continuation cannot
change its size (spec §4.5): it needs its whole page; when less is left, a scroll in UTC
order ends and restarts from its time cursor at the smaller size, any other waits for the
allowance (or raises) as ``Limits.on_exhausted`` says. A page asked for ahead is counted
when it comes, even if the consumer has left by then.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from asyncwifi._core import RequestPipeline
from asyncwifi._stream._kind import ScrollKind
from asyncwifi._stream._machine import Cursor, PageOutcome, ScrollMachine, Step
from asyncwifi._stream._pages import ScrollPage, Spill, Spilled, StreamOptions, kept
from asyncwifi._stream._start import scroll_start_wait
from asyncwifi._transport import BodyBuffer
from asyncwifi.errors import ConflictError, ScrollExpiredError
from asyncwifi.models import ItemError, decode_page, record_ids
from asyncwifi.ratelimit import Lane, Reservation

__all__ = ["Producer"]


log = logging.getLogger("asyncwifi.scroll")

#: the records a stream with no ``limit`` may read
_NO_LIMIT = 1 << 62
#: what the queue carries: a page, the task's error, or None after the last page
Queued = ScrollPage[Any] | Spilled | BaseException | None
#: a fetched page: decoded and its body
Fetched = tuple[Any, bytes | memoryview]


class Producer:
    """The background task's state, touched by its own methods only; it holds no reference
    to the stream or its views. The consumer's side calls :meth:`take` and :meth:`close`."""

    def __init__(
        self, api: RequestPipeline, kind: ScrollKind, options: StreamOptions, window: float
    ) -> None:
        self.api = api
        #: what is asked of the server (the resource's), and how the stream is consumed
        self.kind = kind
        self.options = options
        #: seconds allowed between two requests of the scroll (spec §3)
        self.window = window
        self.max_buffered = max(options.max_buffered, options.prefetch)
        #: a continuation must reach the server within the window: keep 5 % for the road
        self.horizon = window * 0.95
        #: the scroll's place in the limiter's short windows for its next request
        self.keepalive = api.scheduler.keepalive(self.horizon)
        #: the page size asked for: the first query's, a smaller one the server accepted
        #: (learnt through ``kind.smaller`` until the first page came), or a re-scan's
        self.size = kind.size
        #: the size the current scroll asks for: ``size``, or less when the month's object
        #: allowance leaves less (a continuation keeps its scroll's)
        self.asked = kind.size
        self.gate = api.scheduler.object_gate
        #: until the first page came: a refused size may be exchanged for a smaller one
        self._learning = True
        # typed records copy what they keep, so bodies are read into buffers that are
        # reused (see BodyBuffer): one per page not yet consumed; raw records are views of
        # their body, which must stay theirs
        self.spare: list[BodyBuffer] = []
        self.queue: asyncio.Queue[Queued] = asyncio.Queue()
        self.taken = asyncio.Event()
        self.cursor = Cursor.create(
            ordered=kind.ordered and kind.record_time is not None,
            ids=kind.record_time is None and kind.resumable,
        )
        self.machine = ScrollMachine(self.cursor, window=window, resumable=kind.resumable)
        self.spill = Spill(options.spill_budget)
        self._last_length = 0
        self.errors: list[ItemError] = []
        self.requests = 0
        self.resume_requests = 0
        self.pages = 0
        self.total: int | None = None
        self.last_sent: float | None = None
        self.last_received: float | None = None
        #: the small first page's size, until the scroll restarts at ``size`` (no limit)
        self.first = kind.first if options.limit is None else None
        #: consumers waiting in :meth:`take`, and the event that one came
        self.waiting, self.wanted = 0, asyncio.Event()

    # -- the consumer's side -------------------------------------------------------------
    async def take(self) -> ScrollPage[Any] | None:
        """The next page (None after the last one); raises the task's error."""
        self.waiting += 1
        self.wanted.set()
        try:
            got = await self.queue.get()
        finally:
            self.waiting -= 1
        if isinstance(got, Spilled):
            got = self._read_spilled(got)
        self.taken.set()
        # let the task send its next request now, while this page is consumed: a consumer
        # that never suspends mid-page would otherwise keep it waiting to the end
        await asyncio.sleep(0)
        if isinstance(got, BaseException):
            raise got
        return got

    def close(self) -> None:
        """Close (and delete) the spill file; idempotent."""
        self.spill.close()

    def _read_spilled(self, entry: Spilled) -> ScrollPage[Any]:
        """A spilled page, read back and decoded again; only its fresh records."""
        body = self.spill.take(entry.offset, entry.length)
        items, raws = kept(
            decode_page(body, self.kind.page_type, keep_raw=self.options.keep_raw), entry.keep
        )
        page = entry.page
        return ScrollPage(items, raws, page.errors, page.number, page.scroll_id, page.total)

    # -- the task ------------------------------------------------------------------------
    async def run(self) -> None:
        try:
            await self._run()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self.queue.put_nowait(exc)
        finally:
            self.api.scheduler.drop_keepalive(self.keepalive)

    async def _run(self) -> None:
        kind, machine, clock = self.kind, self.machine, self.api.clock
        await self._await_room()
        query: Mapping[str, str] = kind.params
        continuation, carried = False, None
        while True:
            decision, gap = Step.CONTINUE, 0.0
            # may wait for the month, or raise; a restart at a smaller size has its objects
            hold = carried or await self._reserve(continuation)
            carried = None
            if continuation and hold.size < self.asked:
                # less than a page is left, and a scroll cannot change its size (spec §4.5):
                # a new one from the time cursor asks for what is left
                log.info("%s: %d objects left of the allowance, less than a page of %d: the "
                         "scroll restarts from %s", kind.what, hold.size, self.asked,
                         self.cursor.time)  # fmt: skip
                restart = kind.restart(machine.restart_smaller())
                assert restart is not None  # resumable: _reserve asked for less only then
                query, continuation, carried = restart, False, hold
                continue
            if continuation and self.last_received is not None:
                gap = clock.now() - self.last_received
                # past the window the id is known to be dead: resume without a request
                decision = machine.before_continuation(gap)
            if decision is not Step.CONTINUE:
                self.gate.release(hold)
            else:
                page, body, gap = await self._fetch(query, continuation, hold)
                outcome, scroll_id = self._deliver(page, body, continuation, gap)
                del page, body
                if not outcome.fresh and (continuation or machine.resumes):
                    # a request that delivered nothing new: a dead or ending continuation, a
                    # page read again by a re-scan, the proof of an end: what lapses cost
                    self.resume_requests += 1
                decision = machine.after_page(outcome)
                if decision is Step.END or (outcome.fresh and not self.left()):
                    self.queue.put_nowait(None)
                    return
                if decision is Step.CONTINUE and self.first is not None:
                    # the first page was small: once the consumer asks for more, the rest at
                    # the full size (a scroll cannot change its size, spec §4.5) from the
                    # time cursor, or from the start when the records carry no time (once a
                    # client: ``kind.timed`` remembers); a consumer who stopped read no more
                    self.first = None
                    kind.timed(machine.can_restart_smaller())
                    await self._until_asked()
                    query, continuation = kind.restart(machine.restart_larger()) or {}, False
                    continue
                if decision is Step.CONTINUE:
                    assert scroll_id is not None
                    query, continuation = kind.next(scroll_id), True
                    if outcome.fresh:
                        await self._until_needed()
                    continue
            query, continuation = self._act(decision, gap), False

    async def _reserve(self, continuation: bool) -> Reservation:
        """The objects of the next page, reserved (spec §8): a fresh query's at most
        ``size``, as many as are left; a continuation's its scroll's whole page or, when the
        scroll can restart from a time (``machine.restart_smaller``), more than that restart
        would read again."""
        left = self.left()
        if not continuation:
            size = self.size if self.first is None else min(self.size, self.first)
            return await self.gate.reserve(self.kind.what, min(size, left))
        least, want = self.asked, self.asked
        if self.machine.can_restart_smaller():
            again = self.cursor.at_time  # what a restart from the time cursor reads again
            least = min(least, again + 1)
            want = min(want, max(left + again, least))  # past the limit: what is left
        return await self.gate.reserve(self.kind.what, want, least=min(least, want))

    def left(self) -> int:
        """Records the stream may still read (its ``limit``, less what it delivered)."""
        limit = self.options.limit
        return _NO_LIMIT if limit is None else max(0, limit - self.cursor.delivered)

    async def _fetch(
        self, query: Mapping[str, str], continuation: bool, hold: Reservation
    ) -> tuple[Any, bytes | memoryview, float]:
        """One page at the size ``hold`` reserved (a continuation: its scroll's): the decoded
        page, its body, and the most the server can have seen between the previous request
        and this one (previous send to this answer). A first request refused with a 409 is
        sent again at the size ``kind.smaller`` offers (the refusal is the price of learning
        it; ``kind.accepted`` remembers the answer, unless the allowance clamped the size)."""
        kind, previous = self.kind, self.last_sent
        deadline = previous + self.horizon if continuation and previous is not None else None
        keep_raw = self.options.keep_raw
        # raw records are views of their body: a buffer of its own, read into as the body
        # arrives (no second copy joined at the end), kept alive by the records
        buffer = BodyBuffer() if keep_raw else (self.spare.pop() if self.spare else BodyBuffer())
        fetched: Fetched | None = None
        try:
            while fetched is None:
                if not continuation:
                    self.asked = hold.size
                try:
                    fetched = await self.api.read(
                        "GET",
                        kind.path,
                        tag=kind.what,
                        params={**query, "size": str(self.asked)},
                        lane=Lane.SCROLL if continuation else self.options.lane,
                        deadline=deadline,
                        objects=kind.objects,
                        on_sent=self._sent,
                        into=buffer,
                        keepalive=self.keepalive,
                        decode=self._decode,
                        count=_objects,
                        hold=hold,
                        finish=True,
                    )
                except ConflictError:
                    learning = self._learning and not continuation
                    smaller = kind.smaller(self.asked) if learning else None
                    if smaller is None:
                        raise
                    log.info(
                        "%s: size=%d refused (409), asking for %d", kind.what, self.asked, smaller
                    )
                    self.size = smaller
                    hold = await self._reserve(False)
        finally:
            # decoded already (a body that spills is written before the next fetch): the
            # buffer is free again
            if not keep_raw:
                self.spare.append(buffer)
        if self._learning and not continuation and self.asked == self.size:
            self._learning = False  # learnt: a resume asks for this size at once
            kind.accepted(self.size)
        self.last_received = self.api.clock.now()
        gap = 0.0 if previous is None else self.last_received - previous
        return *fetched, gap

    def _sent(self, when: float) -> None:
        self.requests += 1
        self.last_sent = when

    def _decode(self, body: bytes | memoryview) -> Fetched:
        """Pure (it may be retried): the page decoded whole, and its body."""
        return decode_page(body, self.kind.page_type, keep_raw=self.options.keep_raw), body

    def _deliver(
        self, page: Any, body: bytes | memoryview, continuation: bool, gap: float
    ) -> tuple[PageOutcome, str | None]:
        """Account for a fetched page and queue what it has that is new (in memory, or in
        the spill file when memory is full); returns its outcome and scroll id."""
        kind, keep = self.kind, None
        self._last_length = len(body)
        items = page.items
        total, scroll_id = kind.envelope(page.envelope)
        self.total = self.total if total is None else total
        records = page.objects
        size = self.asked if kind.short_ends else None
        ids = [*record_ids(items, page.raw_items), *(error.id for error in page.errors)]
        if self.cursor.repeats(ids, continuation):
            # the server did not advance the scroll: nothing of it is new (the machine
            # decides what that means; its bad records were reported the first time)
            outcome = PageOutcome(
                records, 0, continuation, bool(scroll_id), gap, total, size, repeated=True
            )
            return outcome, scroll_id
        for error in page.errors:
            self._bad_item(error)
        if items:
            keep = self.cursor.deliver(
                items, page.raw_items, kind.record_time, self.machine.restarted
            )
        fresh = len(items) if keep is None else len(keep)
        # a page of repeats only (a resumed scroll re-reading its start): nothing to hand out
        if fresh or page.errors:
            self.pages += 1
            self.queue.put_nowait(self._queued(page, body, keep, scroll_id))
        return PageOutcome(
            records, fresh, continuation, bool(scroll_id), gap, total, size
        ), scroll_id

    def _queued(
        self, page: Any, body: bytes | memoryview, keep: list[int] | None, scroll_id: str | None
    ) -> Queued:
        """What the queue gets for a page: its body spilled when memory is full, or its
        fresh records."""
        if self._spills(len(body)):
            spilled: ScrollPage[Any] = ScrollPage(
                [], None, page.errors, self.pages, scroll_id, self.total
            )
            return Spilled(*self.spill.put(body), keep, spilled)
        items, raws = kept(page, keep)
        return ScrollPage(items, raws, page.errors, self.pages, scroll_id, self.total)

    def _spills(self, length: int) -> bool:
        """Whether a page of ``length`` bytes goes to the spill file: memory is full."""
        in_memory = self.queue.qsize() - self.spill.live
        return in_memory >= self.max_buffered and self.spill.room_for(length)

    def _bad_item(self, error: ItemError) -> None:
        if not self.cursor.aside(error.id):
            return  # a re-scan met it again: reported once
        self.errors.append(error)
        log.warning("%s: a record did not decode and was set aside: %s", self.kind.what, error)
        if self.options.on_item_error is not None:
            self.options.on_item_error(error)

    async def _await_room(self) -> None:
        """Do not start a scroll that the budget cannot keep alive: wait for room."""
        clock = self.api.clock
        while wait := scroll_start_wait(self.api.scheduler, clock.now(), self.window):
            if wait > self.window:
                # not congestion but a spent quota or a pause: the first request's own
                # admission waits for it, or raises in on_exhausted="raise" mode
                return
            log.info("%s: waiting %.1f s for room to keep a scroll alive", self.kind.what, wait)
            await clock.sleep(max(wait, self.window * 0.05))

    async def _until_asked(self) -> None:
        """Wait until the consumer has taken every page queued and asks for another."""
        while self.queue.qsize() or not self.waiting:
            self.wanted.clear()
            await self.wanted.wait()

    async def _until_needed(self) -> None:
        """Wait until the consumer wants another page, or the window needs the next request
        (the scroll's pace: the page goes to the spill file if memory is full)."""
        clock = self.api.clock
        while True:
            queued = self.queue.qsize()
            # ``prefetch=0``: only when the consumer asks (and the queue is empty)
            if queued < self.options.prefetch or (not queued and self.waiting):
                return
            self.taken.clear()
            self.wanted.clear()
            in_memory = queued - self.spill.live
            room = in_memory < self.max_buffered or self.spill.room_for(self._last_length)
            if not room or self.last_sent is None:
                await self._taken_or_wanted()  # past the disk budget: the scroll may lapse
                continue
            # keep the scroll alive: ask for the next page half-way through the window
            remaining = self.last_sent + self.window * 0.5 - clock.now()
            if remaining <= 0:
                return
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation
            # that arrives as the event is set, and the stream would never stop
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(clock.real(remaining)):
                    await self._taken_or_wanted()

    async def _taken_or_wanted(self) -> None:
        """Until the consumer takes a page (``prefetch=0``: until it asks for one)."""
        if self.options.prefetch:
            await self.taken.wait()
            return
        await self.wanted.wait()

    def _act(self, decision: Step, gap: float) -> Mapping[str, str]:
        """The query of a resume, or the error of a scroll that cannot go on."""
        kind, cursor = self.kind, self.cursor
        delivered, total = cursor.delivered, self.total
        known = total if total is not None else "an unknown number of"
        if decision is Step.REPEATED:
            raise ScrollExpiredError(
                f"the server repeats pages: it answered a continuation of the {kind.what} "
                f"scroll with a page the scroll already had (as a server that ignores the "
                f"scroll id does); {delivered} of {known} records were delivered, each once, "
                "and the scroll stopped rather than read them again",
                delivered=delivered,
                total=total,
            )
        since = cursor.time if decision is Step.RESUME_TIME else None
        query = None if decision is Step.FAIL else kind.restart(since)
        if query is None:
            if not kind.resumable:
                hint = "pass resume=True to re-scan and skip what was delivered"
            else:
                hint = "a resume made no progress (scroll ids expire sooner than it can page)"
            raise ScrollExpiredError(
                f"the {kind.what} scroll expired after {delivered} of {known} records "
                f"({gap:.1f} s since the previous request); {hint}",
                delivered=delivered,
                total=total,
            )
        self.api.hooks.fire(self.api.hooks.on_scroll_resume, kind.what)
        # past the window the id certainly lapsed (worth a warning); within it, an empty
        # page after a full one is only ambiguous, and settling it is routine (one request)
        log.log(
            logging.WARNING if gap > self.window else logging.INFO,
            "%s scroll: an empty or expired page after %d records (gap %.1f s); resuming "
            "by %s (resume %d, %d resume requests so far)",
            kind.what,
            delivered,
            gap,
            f"time from {since}" if since else "re-scan, skipping delivered ids",
            self.machine.resumes,
            self.resume_requests,
        )
        if decision is Step.RESUME_RESCAN and kind.rescan_size is not None:
            self.size = kind.rescan_size
        return query


def _objects(fetched: Fetched) -> int:
    """The objects (spec §8) of a fetched page: its records, bad ones included."""
    return int(fetched[0].objects)
