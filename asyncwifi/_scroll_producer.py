"""A scroll stream's background task: the I/O around the sans-I/O ScrollMachine.

It fetches a page, hands the outcome to the machine and does what it decides; it paces
itself on the window (spec §3), not on the consumer: past ``max_buffered`` pages in memory,
pages go to the spill file (:mod:`asyncwifi._scroll_spill`) until its budget is spent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

import msgspec

from asyncwifi._core import RequestPipeline
from asyncwifi._scroll_pages import END, Chunked, Failure, ScrollPage, ScrollSpec
from asyncwifi._scroll_spill import Spill, Spilled
from asyncwifi._scroll_state import Cursor, Decision, PageOutcome, ScrollMachine
from asyncwifi._transport import BodyBuffer
from asyncwifi.errors import ConflictError, ScrollExpiredError
from asyncwifi.models import ItemError, decode_page
from asyncwifi.models._chunks import chunk_page
from asyncwifi.models._identity import record_ids
from asyncwifi.ratelimit import Lane

__all__ = ["Producer"]

log = logging.getLogger("asyncwifi.scroll")


class Producer:
    """The background task's state; it holds no reference to the stream or its views."""

    def __init__(
        self,
        api: RequestPipeline,
        spec: ScrollSpec,
        *,
        keep_raw: bool,
        prefetch: int,
        max_buffered: int,
        window: float,
        skip_ids: Collection[str],
        on_item_error: Callable[[ItemError], None] | None,
        lane: Lane,
        spill_budget: int,
    ) -> None:
        self.api = api
        self.spec = spec
        self.keep_raw = keep_raw
        self.prefetch = prefetch
        self.max_buffered = max_buffered
        self.window = window
        #: a continuation must reach the server within the window: keep 5 % for the road
        self.horizon = window * 0.95
        #: the scroll's place in the limiter's short windows for its next request
        self.keepalive = api.scheduler.keepalive(self.horizon)
        self.on_item_error = on_item_error
        self.lane = lane
        # typed records copy what they keep, so bodies are read into buffers that are
        # reused (see BodyBuffer): one per page not yet consumed; raw records are views of
        # their body, which must stay theirs
        self.spare: list[BodyBuffer] = []
        #: decode pages a chunk at a time as they are consumed (record iteration of events)
        self.chunked = False
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.taken = asyncio.Event()
        self.cursor = Cursor.create(
            ordered=spec.ordered and spec.time_of is not None,
            skip_ids=skip_ids,
            ids=spec.time_of is None and (spec.resumable or bool(skip_ids)),
        )
        self.machine = ScrollMachine(
            self.cursor, window=window, size=spec.size, resumable=spec.resumable
        )
        self.spill = Spill(spill_budget)
        #: the page size a re-scan asked for (None: the first query's)
        self.size: int | None = None
        #: pages queued in memory (spilled ones are not)
        self.in_memory = 0
        self._spilled_at: tuple[int, int] | None = None
        self._last_length = 0
        self.errors: list[ItemError] = []
        self.requests = 0
        self.resume_requests = 0
        self.pages = 0
        self.total: int | None = None
        self.last_sent: float | None = None
        self.last_received: float | None = None

    @property
    def resumes(self) -> int:
        return self.machine.resumes

    def _sent(self, when: float) -> None:
        self.requests += 1
        self.last_sent = when

    def _bad_item(self, error: ItemError) -> None:
        if not self.cursor.aside(error.id):
            return  # a re-scan met it again: reported once
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
            deadline = previous + self.horizon
        buffer = None if self.keep_raw else (self.spare.pop() if self.spare else BodyBuffer())
        page: Any = None
        self._spilled_at = None
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
                keepalive=self.keepalive,
                decode=lambda body: self._decode(body, buffer),
            )
        finally:
            if buffer is not None and not isinstance(page, Chunked):
                self.spare.append(buffer)  # decoded already: the buffer is free again
        self.last_received = self.api.clock.now()
        gap = 0.0 if previous is None else self.last_received - previous
        return page, gap

    def _decode(self, body: bytes | memoryview, buffer: BodyBuffer | None) -> Any:
        """The page, decoded whole (and its body spilled when memory is full), or cut into
        chunks that the consumer decodes as it reads them (see models/_chunks.py): only
        when the stream hands out records one by one, the body is in our own buffer, the
        records carry times in UTC order, and no record of the page needs a check."""
        spec = self.spec
        self._last_length = len(body)
        if self.in_memory >= self.max_buffered and self.spill.room_for(len(body)):
            self._spilled_at = self.spill.put(body)
        elif (
            self.chunked
            and buffer is not None
            and isinstance(body, memoryview)
            and body.obj is buffer.data
            and spec.time_of is not None
            and self.cursor.ordered
            and self.cursor.mode in (None, "time")
            and not self.cursor.needs_check
            and not self.machine.resumes
        ):
            chunked = chunk_page(buffer.data, len(body), spec.page_type)
            if chunked is not None:
                tail, time_of = chunked.tail, spec.time_of
                last = time_of(tail[-1])
                # the time cursor needs every record at the last time: all in the tail
                if last is not None and time_of(tail[0]) != last:
                    return Chunked(chunked, buffer)
        return decode_page(
            body, spec.page_type, keep_raw=self.keep_raw, on_item_error=self._bad_item
        )

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

    def _room(self) -> bool:
        """Whether one more page has somewhere to go: memory, or the spill file."""
        return self.in_memory < self.max_buffered or self.spill.room_for(self._last_length)

    async def _until_needed(self) -> None:
        """Wait until the consumer wants another page, or the window needs the next request
        (the scroll's pace: the page goes to the spill file if memory is full)."""
        clock = self.api.clock
        while True:
            if self.queue.qsize() < self.prefetch:
                return
            self.taken.clear()
            if not self._room() or self.last_sent is None:
                await self.taken.wait()  # past the disk budget: the scroll may lapse
                continue
            # keep the scroll alive: ask for the next page half-way through the window
            remaining = self.last_sent + self.window * 0.5 - clock.now()
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
            self.queue.put_nowait(Failure(exc))
        finally:
            self.api.scheduler.drop_keepalive(self.keepalive)

    async def _run(self) -> None:
        spec, machine = self.spec, self.machine
        clock = self.api.clock
        await self._await_room()
        params: Mapping[str, str] = spec.params
        continuation = False
        while True:
            if continuation and self.last_received is not None:
                decision = machine.before_continuation(clock.now() - self.last_received)
                if decision is not Decision.CONTINUE:
                    # the id is known to be dead: resume (or fail) without a wasted request
                    params, continuation = self._act(decision, clock.now() - self.last_received)
                    continue
            if continuation:
                decoded, gap = await self._fetch(params, continuation=True)
            else:
                decoded, gap, params = await self._fetch_first(params)
            if isinstance(decoded, Chunked):
                scroll_id = self._deliver_chunked(decoded)
                envelope = decoded.chunked.envelope
                records = getattr(envelope, "count", None)
                outcome = PageOutcome(
                    records if isinstance(records, int) else (spec.size or 1),
                    1,
                    continuation,
                    bool(scroll_id),
                    gap,
                )
            else:
                envelope = decoded.envelope
                total = spec.total(envelope)
                if total is not None:
                    self.total = total
                scroll_id = spec.scroll_id(envelope)
                records = len(decoded.items) + len(decoded.errors)
                fresh = self._deliver(decoded, scroll_id) if records else 0
                outcome = PageOutcome(records, fresh, continuation, bool(scroll_id), gap, total)
            if not outcome.fresh and (continuation or machine.resumes):
                # a request that delivered nothing new: a dead or ending continuation, a
                # page read again by a re-scan, the proof of an end: what lapses cost
                self.resume_requests += 1
            decision = machine.after_page(outcome)
            if decision is Decision.END:
                self.queue.put_nowait(END)
                return
            if decision is Decision.CONTINUE:
                assert scroll_id is not None
                params, continuation = self._sized(spec.continuation(scroll_id)), True
                if outcome.fresh:
                    await self._until_needed()
                continue
            params, continuation = self._act(decision, gap)

    async def _fetch_first(self, params: Mapping[str, str]) -> tuple[Any, float, Mapping[str, str]]:
        """The first request of a query, at the largest page size the server accepts: on
        a 409 it falls back through ``spec.smaller_sizes`` (the refused request is the
        price of learning it; ``spec.on_size`` remembers the answer so it is paid once)."""
        spec = self.spec
        smaller = list(spec.smaller_sizes)
        while True:
            try:
                decoded, gap = await self._fetch(params, continuation=False)
            except ConflictError:
                if not smaller or "size" not in params:
                    raise
                size = smaller.pop(0)
                log.info(
                    "%s: the server refused size=%s (409); asking for %d",
                    spec.what,
                    params["size"],
                    size,
                )
                # continuations and restarts are built from spec.params: they follow
                spec.params["size"] = str(size)
                params = {**params, "size": str(size)}
                continue
            if spec.smaller_sizes and "size" in params:
                spec.smaller_sizes = ()  # learnt: a resume asks for this size at once
                if spec.on_size is not None:
                    spec.on_size(int(params["size"]))
            return decoded, gap, params

    def _act(self, decision: Decision, gap: float) -> tuple[Mapping[str, str], bool]:
        """The query of a resume, or the error of a scroll that cannot go on."""
        spec, cursor = self.spec, self.cursor
        delivered, total = cursor.delivered, self.total
        if decision is Decision.FAIL or spec.restart is None:
            if not spec.resumable:
                hint = "pass resume=True to re-scan and skip what was delivered"
            else:
                hint = "a resume made no progress (scroll ids expire sooner than it can page)"
            raise ScrollExpiredError(
                f"the {spec.what} scroll expired after {delivered} of "
                f"{total if total is not None else 'an unknown number of'} records "
                f"({gap:.1f} s since the previous request); {hint}",
                delivered=delivered,
                total=total,
            )
        since = cursor.time if decision is Decision.RESUME_TIME else None
        self.api.hooks.fire(self.api.hooks.on_scroll_resume, spec.what)
        # past the window the id certainly lapsed (worth a warning); within it, an empty
        # page after a full one is only ambiguous, and settling it is routine (one request)
        log.log(
            logging.WARNING if gap > self.window else logging.INFO,
            "%s scroll: an empty or expired page after %d records (gap %.1f s); resuming "
            "by %s (resume %d, %d resume requests so far)",
            spec.what,
            delivered,
            gap,
            f"time from {since}" if since else "re-scan, skipping delivered ids",
            self.machine.resumes,
            self.resume_requests,
        )
        if decision is Decision.RESUME_RESCAN and spec.rescan_size is not None:
            self.size = self.machine.size = spec.rescan_size
        return self._sized(spec.restart(since)), False

    def _sized(self, params: Mapping[str, str]) -> Mapping[str, str]:
        """``params`` with the page size of a re-scan, once one changed it."""
        return params if self.size is None else {**params, "size": str(self.size)}

    def _deliver_chunked(self, page: Chunked) -> str | None:
        """Queue a chunked page; its tail moves the time cursor. Returns its scroll id."""
        spec = self.spec
        assert spec.time_of is not None  # chunked only when ordered by time
        tail = page.chunked.tail
        self.cursor.choose_mode(spec.time_of(tail[0]))
        self.cursor.advance_time(tail, None, spec.time_of)
        self.pages += 1
        self.in_memory += 1
        self.queue.put_nowait(page)
        return spec.scroll_id(page.chunked.envelope)

    def read_chunked(self, page: Chunked) -> Iterator[list[Any]]:
        """A chunked page's records, a chunk at a time, counted as they are decoded; once
        read to the end, its buffer is free for another page."""
        cursor = self.cursor
        for items in page.chunked.batches(self._bad_item):
            cursor.delivered += len(items)
            yield items
        self.spare.append(page.buffer)

    def read_spilled(self, entry: Spilled) -> ScrollPage[Any]:
        """A spilled page, read back and decoded again; only its fresh records."""
        body = self.spill.take(entry.offset, entry.length)
        decoded: Any = decode_page(body, self.spec.page_type, keep_raw=self.keep_raw)
        items: list[Any] = decoded.items
        raws: list[msgspec.Raw] | None = decoded.raw_items
        if entry.keep is not None:
            items = [items[i] for i in entry.keep]
            raws = None if raws is None else [raws[i] for i in entry.keep]
        return ScrollPage(items, raws, entry.errors, entry.number, entry.scroll_id, entry.total)

    def _deliver(self, decoded: Any, scroll_id: str | None) -> int:
        """Queue the page's records not delivered before; returns how many there were."""
        spec, cursor = self.spec, self.cursor
        items: list[Any] = decoded.items
        raws: list[msgspec.Raw] | None = decoded.raw_items
        time_of = spec.time_of
        if items:
            cursor.choose_mode(time_of(items[0]) if time_of is not None else None)
        keep: list[int] | None = None
        fast: list[int] | bool | None = False
        if cursor.mode == "ids" and self.machine.resumes:
            fast = cursor.fresh(record_ids(items, raws))
        if fast is not False:
            keep = fast if isinstance(fast, list) else None
        elif cursor.needs_check or self.machine.resumes:
            # the careful path, record by record: ids to skip, or a resumed scroll
            keep = []
            for index, (item, ident) in enumerate(zip(items, record_ids(items, raws), strict=True)):
                when = time_of(item) if time_of is not None else None
                if cursor.seen(ident, when):
                    continue
                keep.append(index)
                cursor.add(ident, when)
            if len(keep) == len(items):
                keep = None
        elif cursor.mode == "ids":
            cursor.add_ids(record_ids(items, raws))
            cursor.delivered += len(items)
        elif time_of is not None and items:
            cursor.advance_time(items, raws, time_of)
            cursor.delivered += len(items)
        else:
            cursor.delivered += len(items)
        fresh = len(items) if keep is None else len(keep)
        spilled = self._spilled_at
        if not fresh and not decoded.errors:
            if spilled is not None:
                self.spill.take(*spilled)  # nothing of it to hand out: let it go
            return 0  # only repeats (a resumed scroll re-reading its start): nothing to hand out
        self.pages += 1
        if spilled is not None:
            entry = Spilled(*spilled, keep, decoded.errors, self.pages, scroll_id, self.total)
            self.queue.put_nowait(entry)
            return fresh
        if keep is not None:
            items = [items[i] for i in keep]
            raws = None if raws is None else [raws[i] for i in keep]
        self.in_memory += 1
        self.queue.put_nowait(
            ScrollPage(items, raws, decoded.errors, self.pages, scroll_id, self.total)
        )
        return fresh
