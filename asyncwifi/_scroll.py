"""Scroll streams: contacts and events as async iterators that never lapse and never repeat.

spec §3 and §4.2: each scroll response carries a new id; the next request must follow
within 60 s of the previous one, or the id expires, and an expired id answers 200 with no
results, just like the end. A background task fetches ``prefetch`` pages ahead of the
consumer and, when the consumer is slow, still sends the next request before the window
closes (with a deadline the scheduler serves earliest-first), buffering at most
``max_buffered`` pages. An empty page is taken for the end only when nothing says it is an
expiry: a gap longer than the window before it, or (contacts) fewer records than
``totalCount``. An expired events scroll resumes from the last event time delivered,
skipping the ids already delivered at that time; contacts raise ``ScrollExpiredError``
unless ``resume=True``.

Iteration goes through a view object: when a loop breaks, is cancelled or raises, the view
is released and stops the background task at once (and ``aclose()`` / ``async with`` stop
it explicitly).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import msgspec

from asyncwifi._core import Api
from asyncwifi._transport import BodyBuffer
from asyncwifi.errors import AsyncWifiError, ScrollExpiredError
from asyncwifi.models import ContactPage, EventPage, ItemError, decode_page
from asyncwifi.models._slices import SlicedPage, slice_page
from asyncwifi.ratelimit import Lane

__all__ = ["Record", "ScrollPage", "ScrollSpec", "ScrollStream"]

log = logging.getLogger("asyncwifi.scroll")
ItemT = TypeVar("ItemT")

# spec §8: 60 seconds at most between two scroll requests
SCROLL_WINDOW = 60.0


@dataclass(frozen=True, slots=True)
class Record(Generic[ItemT]):
    """One record, typed and as the server's exact JSON bytes (``raw``, with keep_raw)."""

    item: ItemT
    raw: msgspec.Raw | None


@dataclass(slots=True)
class ScrollPage(Generic[ItemT]):
    """One page of a stream: the records that were not delivered before, in order.

    ``raw_items`` (with ``keep_raw``) holds each item's exact bytes, index for index.
    ``errors`` lists records of the page that did not decode (also passed to
    ``on_item_error`` and kept on ``stream.errors``). ``number`` counts pages from 1.
    """

    items: list[ItemT]
    raw_items: list[msgspec.Raw] | None
    errors: list[ItemError]
    number: int
    scroll_id: str | None
    total: int | None = None

    @property
    def count(self) -> int:
        """How many records the page carries."""
        return len(self.items)


@dataclass(slots=True)
class ScrollSpec:
    """How one kind of scroll is asked for and read (built by the resources)."""

    path: str
    #: query of the first request
    params: dict[str, str]
    #: the query of a continuation, given the latest scroll id
    continuation: Callable[[str], dict[str, str]]
    #: ContactPage or EventPage
    page_type: type[ContactPage] | type[EventPage]
    #: the record's identity (cid or event id), for de-duplication
    key: Callable[[Any], str | None]
    #: contacts: totalCount; events: None
    total: Callable[[Any], int | None]
    scroll_id: Callable[[Any], str | None]
    #: events: restart the query from a time, skipping what was delivered; None: no resume
    restart: Callable[[str | None], dict[str, str]] | None = None
    #: the record's time (events' ``date``), usable as a restart point when ordered by it
    time_of: Callable[[Any], str | None] | None = None
    #: whether an expiry may be resumed (events always; contacts when resume=True)
    resumable: bool = False
    what: str = "records"
    objects: str | None = None


@dataclass(slots=True)
class _Cursor:
    """What was delivered, enough to resume without repeating a record."""

    delivered: int = 0
    #: latest record time delivered and the ids delivered at exactly that time
    time: str | None = None
    ids_at_time: set[str] = field(default_factory=set)
    #: every id delivered, kept only when no time cursor is possible (full re-scan)
    all_ids: set[str] | None = None
    #: ids to skip that the caller already has (a resumed backfill)
    skip: set[str] = field(default_factory=set)
    #: records skipped because the caller had them (they count toward a total)
    skipped: int = 0

    def seen(self, key: str | None, when: str | None) -> bool:
        if key is None:
            return False
        if key in self.skip:
            if self.all_ids is not None:
                # count it toward the total once; a re-scan finds it among all_ids
                self.skip.discard(key)
                self.all_ids.add(key)
                self.skipped += 1
            return True
        if self.all_ids is not None and key in self.all_ids:
            return True
        return when is not None and when == self.time and key in self.ids_at_time

    def advance(
        self,
        items: list[Any],
        key: Callable[[Any], str | None],
        time_of: Callable[[Any], str | None],
    ) -> None:
        """Record a page in time order without per-record work: only its tail matters
        (the last time, and the ids delivered at exactly that time)."""
        if time_of(items[-1]) is None:
            for item in items:
                self.add(key(item), time_of(item))
            return
        self.delivered += len(items)
        self.advance_time(items, key, time_of)

    def advance_time(
        self,
        items: list[Any],
        key: Callable[[Any], str | None],
        time_of: Callable[[Any], str | None],
    ) -> None:
        """Move the time cursor to the end of ``items``, whose last record has a time and
        which hold every record of the page at that time (the caller counts them)."""
        last = time_of(items[-1])
        if last is None:
            raise ValueError("advance_time needs a last record with a time")
        tail: set[str] = set()
        for item in reversed(items):
            if time_of(item) != last:
                break
            ident = key(item)
            if ident is not None:
                tail.add(ident)
        if self.time is None or last > self.time:
            self.time, self.ids_at_time = last, tail
        elif last == self.time:
            self.ids_at_time |= tail

    def add(self, key: str | None, when: str | None) -> None:
        self.delivered += 1
        if key is None:
            return
        if self.all_ids is not None:
            self.all_ids.add(key)
        if when is not None:
            if self.time is None or when > self.time:
                self.time = when
                self.ids_at_time = {key}
            elif when == self.time:
                self.ids_at_time.add(key)


_END = object()


class _Producer:
    """The background task's state; it holds no reference to the stream or its views."""

    def __init__(
        self,
        api: Api,
        spec: ScrollSpec,
        *,
        keep_raw: bool,
        prefetch: int,
        max_buffered: int,
        window: float,
        skip_ids: Collection[str],
        on_item_error: Callable[[ItemError], None] | None,
        lane: Lane,
    ) -> None:
        self.api = api
        self.spec = spec
        self.keep_raw = keep_raw
        self.prefetch = prefetch
        self.max_buffered = max_buffered
        self.window = window
        self.on_item_error = on_item_error
        self.lane = lane
        # typed records copy what they keep, so bodies are read into buffers that are
        # reused (see BodyBuffer): one per page not yet consumed; raw records are views of
        # their body, which must stay theirs
        self.spare: list[BodyBuffer] = []
        #: decode pages a slice at a time as they are consumed (record iteration of events)
        self.sliced = False
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.taken = asyncio.Event()
        self.cursor = _Cursor(skip=set(skip_ids))
        if spec.time_of is None and (spec.resumable or skip_ids):
            self.cursor.all_ids = set()
        self.errors: list[ItemError] = []
        self.requests = 0
        self.pages = 0
        self.resumes = 0
        self.total: int | None = None
        self.last_sent: float | None = None
        self.last_received: float | None = None

    def _sent(self, when: float) -> None:
        self.requests += 1
        self.last_sent = when

    def _bad_item(self, error: ItemError) -> None:
        self.errors.append(error)
        log.warning("%s: a record did not decode and was set aside: %s", self.spec.what, error)
        if self.on_item_error is not None:
            self.on_item_error(error)

    async def _fetch(self, params: Mapping[str, str], *, continuation: bool) -> tuple[Any, float]:
        """One page request; returns the decoded page and the most the server can have seen
        between the previous request and this one: from the previous send to this answer."""
        previous = self.last_sent
        deadline = None
        if continuation and previous is not None:
            # the next request must reach the server within the window: keep 5 % for the road
            deadline = previous + self.window * 0.95
        buffer = None if self.keep_raw else (self.spare.pop() if self.spare else BodyBuffer())
        page: Any = None
        try:
            page = await self.api.read(
                "GET",
                self.spec.path,
                params=params,
                lane=Lane.SCROLL if continuation else self.lane,
                deadline=deadline,
                objects=self.spec.objects,
                on_sent=self._sent,
                into=buffer,
                decode=lambda body: self._decode(body, buffer),
            )
        finally:
            if buffer is not None and not isinstance(page, _SlicedPage):
                self.spare.append(buffer)  # decoded already: the buffer is free again
        self.last_received = self.api.clock.now()
        gap = 0.0 if previous is None else self.last_received - previous
        return page, gap

    def _decode(self, body: bytes | memoryview, buffer: BodyBuffer | None) -> Any:
        """The page, decoded whole, or cut into slices that the consumer decodes as it
        reads them (see models/_slices.py): only when the stream hands out records one by
        one, the body is in our own buffer, and no record of the page needs a check."""
        spec = self.spec
        if (
            self.sliced
            and buffer is not None
            and isinstance(body, memoryview)
            and body.obj is buffer.data
            and spec.time_of is not None
            and not self._dedupe()
        ):
            sliced = slice_page(buffer.data, len(body), spec.page_type)
            if sliced is not None:
                tail, time_of = sliced.tail, spec.time_of
                last = time_of(tail[-1])
                # the time cursor needs every record at the last time: all in the tail
                if last is not None and time_of(tail[0]) != last:
                    return _SlicedPage(sliced, buffer)
        return decode_page(
            body, spec.page_type, keep_raw=self.keep_raw, on_item_error=self._bad_item
        )

    def _dedupe(self) -> bool:
        """Whether each record must be checked against what was delivered before."""
        cursor = self.cursor
        return bool(cursor.skip) or cursor.all_ids is not None or self.resumes > 0

    async def _await_room(self) -> None:
        """Do not start a scroll that the budget cannot keep alive: wait for room."""
        scheduler = self.api.scheduler
        clock = self.api.clock
        while not scheduler.can_meet(clock.now() + self.window * 0.5, lane=Lane.SCROLL):
            wait = scheduler.earliest_admission(lane=Lane.SCROLL) - clock.now()
            if wait > self.window:
                # not congestion but a spent quota or a pause: the first request's own
                # admission waits for it, or raises in on_quota_exhausted="raise" mode
                return
            log.info("%s: waiting %.1f s for room to keep a scroll alive", self.spec.what, wait)
            await clock.sleep(max(wait, self.window * 0.05))

    async def _until_needed(self) -> None:
        """Wait until the consumer wants another page, or the window needs a keep-alive."""
        clock = self.api.clock
        while True:
            buffered = self.queue.qsize()
            if buffered < self.prefetch:
                return
            self.taken.clear()
            if buffered >= self.max_buffered or self.last_sent is None:
                await self.taken.wait()  # the memory bound wins: the scroll may lapse
                continue
            # keep the scroll alive: ask for the next page half-way through the window
            keep_alive_at = self.last_sent + self.window * 0.5
            remaining = keep_alive_at - clock.now()
            if remaining <= 0:
                return
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation
            # that arrives as the event is set, and the stream would never stop
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(clock.real(remaining)):
                    await self.taken.wait()

    async def run(self) -> None:
        try:
            await self._run()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            self.queue.put_nowait(_Failure(exc))

    async def _run(self) -> None:
        spec = self.spec
        clock = self.api.clock
        await self._await_room()
        params: Mapping[str, str] = spec.params
        continuation = False
        while True:
            if continuation and self.last_received is not None:
                # the server saw the previous request before we had its answer, so past
                # this the id is certainly dead
                lapsed = clock.now() - self.last_received
                if lapsed > self.window:
                    # the id is known to be dead: resume (or fail) without a wasted request
                    params, continuation = self._resume(lapsed), False
            decoded, gap = await self._fetch(params, continuation=continuation)
            if isinstance(decoded, _SlicedPage):
                # never empty, never needs a check: counted as its records are read
                scroll_id, fresh = self._deliver_sliced(decoded), 1
            else:
                envelope = decoded.envelope
                total = spec.total(envelope)
                if total is not None:
                    self.total = total
                scroll_id = spec.scroll_id(envelope)
                if not decoded.items and not decoded.errors:
                    if continuation and self._expired(gap):
                        params, continuation = self._resume(gap), False
                        continue
                    self.queue.put_nowait(_END)
                    return
                fresh = self._deliver(decoded, scroll_id)
            if not scroll_id:
                self.queue.put_nowait(_END)
                return
            params = spec.continuation(scroll_id)
            continuation = True
            if fresh:
                await self._until_needed()

    def _deliver_sliced(self, page: _SlicedPage) -> str | None:
        """Queue a sliced page; its tail moves the time cursor. Returns its scroll id."""
        spec = self.spec
        assert spec.time_of is not None  # sliced only when ordered by time
        self.cursor.advance_time(page.sliced.tail, spec.key, spec.time_of)
        self.pages += 1
        self.queue.put_nowait(page)
        return spec.scroll_id(page.sliced.envelope)

    def read_sliced(self, page: _SlicedPage) -> Iterator[list[Any]]:
        """A sliced page's records, a slice at a time, counted as they are decoded; once
        read to the end, its buffer is free for another page."""
        cursor = self.cursor
        for items in page.sliced.batches(self._bad_item):
            cursor.delivered += len(items)
            yield items
        self.spare.append(page.buffer)

    def _expired(self, gap: float) -> bool:
        """An empty continuation: the end, or a lapsed id that answers like the end?"""
        if self.total is not None:
            # contacts: the envelope's totalCount says whether anything is missing
            return self.cursor.delivered + self.cursor.skipped < self.total
        # events: no total. The server saw the two requests between the previous send and
        # this answer, so a gap within the window is certainly the end; past it, a lapse is
        # possible, and a needless resume costs a request where a wrong end loses data.
        return gap > self.window

    def _resume(self, gap: float) -> Mapping[str, str]:
        spec = self.spec
        delivered, total = self.cursor.delivered, self.total
        if not spec.resumable or spec.restart is None:
            raise ScrollExpiredError(
                f"the {spec.what} scroll expired after {delivered} of "
                f"{total if total is not None else 'an unknown number of'} records "
                f"({gap:.1f} s since the previous request); pass resume=True to re-scan "
                "and skip what was delivered",
                delivered=delivered,
                total=total,
            )
        self.resumes += 1
        self.api.hooks.fire(self.api.hooks.on_scroll_resume, spec.what)
        log.warning(
            "%s scroll expired after %d records (gap %.1f s); resuming (resume %d)",
            spec.what,
            delivered,
            gap,
            self.resumes,
        )
        return spec.restart(self.cursor.time if self.cursor.all_ids is None else None)

    def _deliver(self, decoded: Any, scroll_id: str | None) -> int:
        """Queue the page's records not delivered before; returns how many there were."""
        spec = self.spec
        cursor = self.cursor
        items: list[Any] = decoded.items
        raws: list[msgspec.Raw] | None = decoded.raw_items
        key, time_of = spec.key, spec.time_of
        dedupe = self._dedupe()
        if dedupe:
            kept: list[Any] = []
            kept_raw: list[msgspec.Raw] | None = [] if raws is not None else None
            for index, item in enumerate(items):
                ident = key(item)
                when = time_of(item) if time_of else None
                if cursor.seen(ident, when):
                    continue
                kept.append(item)
                if kept_raw is not None and raws is not None:
                    kept_raw.append(raws[index])
                cursor.add(ident, when)
            items, raws = kept, kept_raw
        elif time_of is not None and items:
            cursor.advance(items, key, time_of)
        else:
            cursor.delivered += len(items)
        if not items and not decoded.errors:
            return 0  # only repeats (a resumed scroll re-reading its start): nothing to hand out
        self.pages += 1
        self.queue.put_nowait(
            ScrollPage(items, raws, decoded.errors, self.pages, scroll_id, self.total)
        )
        return len(items)


@dataclass(slots=True)
class _SlicedPage:
    """A page of records decoded as they are consumed, with the buffer its body is in."""

    sliced: SlicedPage
    buffer: BodyBuffer


@dataclass(slots=True)
class _Failure:
    error: BaseException


async def _view(stream: ScrollStream[Any], kind: str) -> AsyncIterator[Any]:
    """One iteration over a stream, as an async generator: the cheapest per-record step
    asyncio has. Releasing it (break, cancel, raise) runs the ``finally``, which stops the
    stream's background task; asyncio finalizes an abandoned generator at once.

    Records are handed out of the page's list, not iterated over it: the stream keeps no
    reference, so a record the consumer is done with is freed at once, while its memory is
    still in the cache (a 10,000-record page is megabytes; freed at the end, cold, it cost
    about a tenth of the stream's CPU), and the next page decodes into that memory."""
    next_page = stream._next_page
    read_sliced = stream._producer.read_sliced
    try:
        while (page := await next_page()) is not None:
            if kind == "items":
                # a sliced page (only record iteration gets them) comes a slice at a time
                batches = read_sliced(page) if isinstance(page, _SlicedPage) else (page.items,)
                del page
                for items in batches:
                    items.reverse()
                    pop = items.pop
                    while items:
                        yield pop()
                del batches
            elif kind == "pages":
                yield page
                del page  # not held while the next page is awaited
            else:
                assert isinstance(page, ScrollPage)  # records() never gets a sliced page
                raws: list[msgspec.Raw | None] = (
                    list(page.raw_items) if page.raw_items is not None else [None] * len(page.items)
                )
                items = page.items
                del page
                for item, raw in zip(items, raws, strict=True):
                    yield Record(item, raw)
                del items, raws
    finally:
        stream._stop()


class ScrollStream(Generic[ItemT]):
    """An async iterable of records fetched page by page from a scroll (see module doc).

    ``async for item in stream``: typed records. ``stream.pages()``: page by page.
    ``stream.records()``: :class:`Record` (typed + the server's bytes; needs keep_raw).
    Counters: ``delivered``, ``requests``, ``pages_fetched``, ``resumes``, ``total``;
    records that did not decode are on ``errors``.
    """

    def __init__(
        self,
        api: Api,
        spec: ScrollSpec,
        *,
        keep_raw: bool = False,
        prefetch: int = 1,
        max_buffered: int = 4,
        window: float = SCROLL_WINDOW,
        skip_ids: Collection[str] = (),
        on_item_error: Callable[[ItemError], None] | None = None,
        lane: Lane = Lane.DEFAULT,
    ) -> None:
        self._producer = _Producer(
            api,
            spec,
            keep_raw=keep_raw,
            prefetch=prefetch,
            max_buffered=max(max_buffered, prefetch),
            window=window,
            skip_ids=skip_ids,
            on_item_error=on_item_error,
            lane=lane,
        )
        self._task: asyncio.Task[None] | None = None
        self._finished = False
        self._iterating = False

    # -- iteration ---------------------------------------------------------------------
    def _start(self) -> None:
        if self._task is None and not self._finished:
            self._task = asyncio.get_running_loop().create_task(
                self._producer.run(), name=f"asyncwifi-scroll-{self._producer.spec.what}"
            )

    def _view(self, kind: str) -> AsyncIterator[Any]:
        if self._iterating:
            raise AsyncWifiError("a scroll stream can be iterated only once")
        if kind == "records" and not self._producer.keep_raw:
            raise AsyncWifiError("records() needs keep_raw=True")
        self._iterating = True
        self._producer.sliced = kind == "items"
        return _view(self, kind)

    def __aiter__(self) -> AsyncIterator[ItemT]:
        return self._view("items")

    def pages(self) -> AsyncIterator[ScrollPage[ItemT]]:
        """Iterate page by page."""
        return self._view("pages")

    def records(self) -> AsyncIterator[Record[ItemT]]:
        """Iterate records as (typed item, exact server bytes)."""
        return self._view("records")

    async def _next_page(self) -> ScrollPage[ItemT] | _SlicedPage | None:
        if self._finished:
            return None
        self._start()
        producer = self._producer
        got = await producer.queue.get()
        producer.taken.set()
        # let the producer send its next request now, while this page is consumed: a
        # consumer that never suspends mid-page would otherwise keep it waiting to the end
        await asyncio.sleep(0)
        if got is _END:
            self._finished = True
            return None
        if isinstance(got, _Failure):
            self._stop()
            raise got.error
        page: ScrollPage[ItemT] | _SlicedPage = got
        return page

    def _stop(self) -> None:
        self._finished = True
        task = self._task
        if task is not None and not task.done():
            with contextlib.suppress(RuntimeError):  # the loop may be closed already
                task.cancel()

    async def aclose(self) -> None:
        """Stop the background task and wait until it has let go of its connection."""
        self._stop()
        task, self._task = self._task, None
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def __aenter__(self) -> ScrollStream[ItemT]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __del__(self) -> None:
        self._stop()

    # -- what happened -------------------------------------------------------------------
    @property
    def delivered(self) -> int:
        """Records handed to the consumer's side so far (queued pages included)."""
        return self._producer.cursor.delivered

    @property
    def requests(self) -> int:
        """Requests this stream sent (retries included)."""
        return self._producer.requests

    @property
    def pages_fetched(self) -> int:
        """Non-empty pages fetched."""
        return self._producer.pages

    @property
    def resumes(self) -> int:
        """How many times an expired scroll was resumed."""
        return self._producer.resumes

    @property
    def total(self) -> int | None:
        """The server's total count, when the kind of scroll reports one (contacts)."""
        return self._producer.total

    @property
    def errors(self) -> list[ItemError]:
        """Records that did not decode; they were not delivered, and nothing else was lost."""
        return self._producer.errors

    def __repr__(self) -> str:
        p = self._producer
        return (
            f"ScrollStream({p.spec.what}, delivered={p.cursor.delivered}, "
            f"requests={p.requests}, resumes={p.resumes})"
        )
