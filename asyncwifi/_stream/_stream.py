"""Scroll streams: contacts and events as async iterators that never lapse and never repeat.

spec §3 and §4.2: each scroll response carries a new id; the next request must follow
within 60 s of the previous one, or the id expires, and an expired id answers 200 with no
results, just like the end. A background task (:mod:`asyncwifi._stream._task`) fetches
``prefetch`` pages ahead of the consumer and, when the consumer is slow, still sends the next
request before the window closes; pages beyond ``max_buffered`` in memory go to an anonymous
temporary file (``_pages.Spill``, at most ``spill_budget`` bytes), so a slow consumer
costs no request. What an empty page means, and how a lapse is resumed exactly once
on every record shape, is decided by :mod:`asyncwifi._stream._machine` (no I/O).

Iteration goes through a view object: when a loop breaks, is cancelled or raises, the view
is released and stops the background task at once (and ``aclose()`` / ``async with`` stop
it explicitly); the spill file is closed with it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Generic, TypeVar

from asyncwifi._core import RequestPipeline
from asyncwifi._options import CallOptions, LastResponse, RawResponse
from asyncwifi._retry import RetryPolicy
from asyncwifi._stream._kind import ScrollKind
from asyncwifi._stream._pages import (
    DEFAULT_OPTIONS,
    SCROLL_WINDOW,
    Record,
    ScrollPage,
    StreamOptions,
)
from asyncwifi._stream._task import Producer
from asyncwifi.errors import AsyncWifiError, ValidationError
from asyncwifi.models import ItemError
from asyncwifi.ratelimit import Lane

__all__ = ["Record", "ScrollPage", "ScrollStream"]

ItemT = TypeVar("ItemT")


async def _view(stream: ScrollStream[Any], kind: str) -> AsyncIterator[Any]:
    """One iteration over a stream, as an async generator: the cheapest per-record step
    asyncio has. Releasing it (break, cancel, raise) runs the ``finally``, which stops the
    stream's background task; asyncio finalizes an abandoned generator at once.

    Records are handed out of the page's list, not iterated over it: the stream keeps no
    reference, so a record the consumer is done with is freed at once, while its memory is
    still in the cache (a 10,000-record page is megabytes; freed at the end, cold, it cost
    about a tenth of the stream's CPU), and the next page decodes into that memory."""
    take = stream._producer.take
    #: records still to hand out (a last page read whole may hold more than the limit)
    left = stream._producer.options.limit
    try:
        if not stream._start():
            return
        while (page := await take()) is not None:
            if left is not None:
                if left <= 0:
                    return
                if page.count > left:
                    page = page.first(left)
                left -= page.count
            if kind == "pages":
                # handed out, not held while suspended here: a consumer done with the page
                # (a copy loop that committed it) frees it before asking for the next one
                handed, page = [page], None
                yield handed.pop()
                continue
            if kind == "items":
                items = page.items
            else:
                raws = page.raw_items if page.raw_items is not None else [None] * page.count
                items = list(map(Record, page.items, raws))
            del page
            items.reverse()
            pop = items.pop
            while items:
                yield pop()
            del items
    finally:
        stream._stop()


class ScrollStream(Generic[ItemT]):
    """An async iterable of records fetched page by page from a scroll (see module doc).

    ``async for item in stream``: typed records. ``stream.pages()``: page by page.
    ``stream.records()``: :class:`Record` (typed + the server's bytes; needs keep_raw).
    Counters: ``delivered``, ``requests``, ``pages_fetched``, ``resumes``,
    ``resume_requests``, ``pages_spilled``, ``total``;
    records that did not decode are on ``errors``.
    """

    def __init__(
        self,
        api: RequestPipeline,
        kind: ScrollKind,
        options: StreamOptions | None = None,
        *,
        window: float = SCROLL_WINDOW,
    ) -> None:
        # the caller's options (``options=`` of the lists): one value, checked here
        if options is None:
            options = DEFAULT_OPTIONS
        elif not isinstance(options, StreamOptions):
            raise ValidationError(f"options must be a StreamOptions, got {options!r}")
        self._producer = Producer(api, kind, options, window)
        #: the last page's response (``last_response``), reported by the pipeline
        self._last = LastResponse()
        self._task: asyncio.Task[None] | None = None
        self._finished = False
        self._kind: str | None = None

    # -- iteration ---------------------------------------------------------------------
    def _view(self, kind: str) -> AsyncIterator[Any]:
        if self._kind is not None:
            raise AsyncWifiError("a scroll stream can be iterated only once")
        if kind == "records" and not self._producer.options.keep_raw:
            raise AsyncWifiError("records() needs keep_raw=True")
        self._kind = kind
        return _view(self, kind)

    def __aiter__(self) -> AsyncIterator[ItemT]:
        return self._view("items")

    def pages(self) -> AsyncIterator[ScrollPage[ItemT]]:
        """Iterate page by page."""
        return self._view("pages")

    def records(self) -> AsyncIterator[Record[ItemT]]:
        """Iterate records as (typed item, exact server bytes)."""
        return self._view("records")

    def _start(self) -> bool:
        """Start the background task; False if the stream was stopped before."""
        if self._finished:
            return False
        run = self._producer.run()
        name = f"asyncwifi-scroll-{self._producer.kind.what}"
        loop = asyncio.get_running_loop()
        self._task = loop.create_task(run, name=name, context=self._last.context())
        return True

    def _stop(self) -> None:
        self._finished = True
        self._producer.close()
        task = self._task
        if task is not None and not task.done():
            with contextlib.suppress(RuntimeError):  # the loop may be closed already
                task.cancel()

    async def aclose(self) -> None:
        """Stop the background task and wait until it has let go of its connection, and a
        page it had asked for is in and counted (spec §8: the server served it)."""
        self._stop()
        task, self._task = self._task, None
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._producer.api.abandoned.settle()

    async def __aenter__(self) -> ScrollStream[ItemT]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __del__(self) -> None:
        if hasattr(self, "_producer"):  # not when __init__ refused the options
            self._stop()

    def with_options(
        self,
        *,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        max_wait: float | None = None,
        lane: Lane | str | None = None,
    ) -> ScrollStream[ItemT]:
        """This stream, its requests with these options (``Client.with_options``'s; a
        ``max_wait`` binds each page's admission); before it is iterated."""
        if self._kind is not None:
            raise AsyncWifiError("with_options() goes before the stream is iterated")
        options = CallOptions(timeout, retry, max_wait, lane)  # type: ignore[arg-type]
        self._producer.api = self._producer.api.derive(options)
        return self

    # -- what happened -------------------------------------------------------------------
    @property
    def last_response(self) -> RawResponse[None] | None:
        """The last page's response: status, headers, request id, the rate-limit and object
        headers, elapsed (no body: the records are the stream's); None before the first."""
        return self._last.raw()

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
        return self._producer.machine.resumes

    @property
    def resume_requests(self) -> int:
        """Requests that delivered nothing new: continuations that found the end or a dead
        id, pages a re-scan read again, proofs of an ambiguous end (what lapses cost)."""
        return self._producer.resume_requests

    @property
    def pages_spilled(self) -> int:
        """Pages that waited in the spill file for a slow consumer."""
        return self._producer.spill.pages

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
            f"ScrollStream({p.kind.what}, delivered={p.cursor.delivered}, "
            f"requests={p.requests}, resumes={p.machine.resumes})"
        )
