"""Pages in memory across a job's feeds: a bound set by the concurrency, not by the events moved.

A page's body and records live from the request that fetches it to the commit of its write.
A job of several feeds (a backfill's slices), each with a page in hand while others commit,
held up to three pages a feed (in hand, committing, fetched ahead) and more when commits
queued. With a :class:`PageRoom` a feed takes a place before it asks for its next page and
gives it back once that page's write committed (or brought nothing to write): at most
``pages`` are in memory at once, however many feeds share the room.
"""

from __future__ import annotations

import asyncio
from typing import Any

from asyncwifi._protocol import require_positive

__all__ = ["PageRoom"]


class PageRoom:
    """At most ``pages`` batches fetched and not yet committed, across the feeds sharing it."""

    def __init__(self, pages: int) -> None:
        self.pages = int(require_positive(pages, "pages_in_memory", integer=True))
        self._free = asyncio.Semaphore(self.pages)

    async def take(self) -> None:
        """Wait for a place before fetching the next page."""
        await self._free.acquire()

    def give(self) -> None:
        """The page fetched under the last place taken is gone (nothing to write, an error)."""
        self._free.release()

    def give_after(self, write: asyncio.Future[Any] | None) -> None:
        """The page's place is given back when ``write`` ends (None: at once)."""
        if write is None or write.done():
            self.give()
        else:
            write.add_done_callback(lambda _f: self.give())

    def __repr__(self) -> str:
        return f"PageRoom({self.pages} pages)"
