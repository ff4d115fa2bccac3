"""What a request asks for (``Ask``, its ``Lane``), its place in the queue (``Waiter``) and
the ``Permit`` that ``async with scheduler.slot()`` holds."""

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
    lane's handicap, then arrival order); ``fut`` gets its admission number."""

    key: tuple[int, float, int]
    fut: asyncio.Future[int]
    ask: Ask


class Permit:
    """One admission held by ``async with sched.slot(...) as permit`` (released on exit):
    ``seq`` is its admission number, ``sent_at`` its clock time."""

    __slots__ = ("_ask", "_sched", "sent_at", "seq")

    def __init__(self, sched: Scheduler, ask: Ask) -> None:
        self._sched = sched
        self._ask = ask
        self.seq = 0
        self.sent_at = 0.0

    def observe(self, status: int, headers: Mapping[str, str] | RateLimitHeaders | None) -> None:
        """Feed the response back: remaining counts, a 429's pause, object quotas."""
        self._sched.observe(status, headers, sent_at=self.sent_at, seq=self.seq)

    def refund(self) -> None:
        """Give the admission back: only when the request certainly never left the process."""
        self._sched.refund(self.seq)

    async def __aenter__(self) -> Permit:
        self.seq = seq = await self._sched._acquire(self._ask)
        self.sent_at = self._sched.sent_at(seq)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._sched.release(self.seq)

    def __repr__(self) -> str:
        return f"<Permit #{self.seq or '-'} {self._ask[1]}>"
