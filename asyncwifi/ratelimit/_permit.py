"""What a caller holds (a ``Lane``, a ``Permit``), what a request asks for (``Ask``) and its
place in the queue (``Waiter``)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from enum import IntEnum
from typing import TYPE_CHECKING, NamedTuple

from asyncwifi.ratelimit._headers import RateLimitHeaders
from asyncwifi.ratelimit._keepalive import KeepAlive

if TYPE_CHECKING:
    from asyncwifi.ratelimit._scheduler import Scheduler

__all__ = ["PLAIN", "Ask", "Lane", "Permit", "Waiter"]


class Lane(IntEnum):
    """Request classes; a lower lane is served first among waiters of similar age."""

    INTERACTIVE = 0
    SCROLL = 1
    DEFAULT = 2
    BULK = 3


#: what a request asks for: its lane, tag, deadline, object quota and open scroll
Ask = tuple[Lane, str, float | None, str | None, KeepAlive | None]
PLAIN: dict[Lane, Ask] = {lane: (lane, "other", None, None, None) for lane in Lane}


class Waiter(NamedTuple):
    """A queued request, ordered by its unique key (deadline tier, then arrival plus the
    lane's handicap, then arrival order)."""

    key: tuple[int, float, int]
    fut: asyncio.Future[Permit]
    permit: Permit


class Permit:
    """One request's admission: ``async with sched.slot(...) as permit`` (released on exit), or
    ``await sched.acquire(...)`` then ``permit.release()``. Once admitted, ``sent_at`` is its
    clock time, ``seq`` this process's admission number, ``ticket`` the store's handle."""

    __slots__ = ("_ask", "_released", "_sched", "sent_at", "seq", "ticket")

    def __init__(self, sched: Scheduler, ask: Ask) -> None:
        self._sched = sched
        self._ask = ask
        self._released = False
        self.sent_at: float
        self.seq: int
        self.ticket: object

    def observe(self, status: int, headers: Mapping[str, str] | RateLimitHeaders | None) -> None:
        """Feed the response back: remaining counts, a 429's pause, object quotas."""
        self._sched.observe(status, headers, sent_at=self.sent_at, seq=self.seq)

    def refund(self) -> None:
        """Give the admission back: only when the request certainly never left the process."""
        self._sched._refund(self)

    def release(self) -> None:
        """End the request (frees its in-flight place); ``slot()`` does this on exit."""
        self._sched._release(self)

    async def __aenter__(self) -> Permit:
        return await self._sched._admit(self, True)

    async def __aexit__(self, *exc: object) -> None:
        self._sched._release(self)

    def __repr__(self) -> str:
        return f"<Permit #{getattr(self, 'seq', '-')} {self._ask[1]}>"
