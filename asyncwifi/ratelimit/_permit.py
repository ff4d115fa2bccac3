"""What a caller holds: a ``Lane``, a ``Permit`` once admitted, and the ``async with`` slot;
and the queue's entry (``Waiter``), ordered by its key: the deadline tier, then arrival plus
the lane's handicap, then arrival order."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from enum import IntEnum
from types import TracebackType
from typing import TYPE_CHECKING

from asyncwifi.ratelimit._headers import RateLimitHeaders
from asyncwifi.ratelimit._keepalive import KeepAlive

if TYPE_CHECKING:
    from asyncwifi.ratelimit._scheduler import Scheduler

__all__ = ["HeadersLike", "Lane", "Permit", "Slot", "Waiter"]

HeadersLike = Mapping[str, str] | RateLimitHeaders | None


class Lane(IntEnum):
    """Request classes; a lower lane is served first among waiters of similar age."""

    INTERACTIVE = 0
    SCROLL = 1
    DEFAULT = 2
    BULK = 3


class Permit:
    """An admission: the request may be sent now. ``sent_at`` is the admission time."""

    __slots__ = ("_released", "_sched", "lane", "sent_at", "seq", "tag", "ticket")

    def __init__(
        self, sched: Scheduler, sent_at: float, seq: int, ticket: object, lane: Lane, tag: str
    ) -> None:
        self._sched = sched
        self._released = False
        #: clock time of the admission (the client's view of the send time)
        self.sent_at = sent_at
        #: this process's admission number (orders what the server's counts refer to)
        self.seq = seq
        #: the store's handle on the logged admission (for a refund)
        self.ticket = ticket
        self.lane = lane
        #: what the request is (``"events"``, ``"login"``...): the store counts per tag
        self.tag = tag

    def observe(self, status: int, headers: HeadersLike) -> None:
        """Feed the response back: remaining counts, a 429's pause, object quotas."""
        self._sched.observe(status, headers, sent_at=self.sent_at, seq=self.seq)

    def refund(self) -> None:
        """Give the admission back: only when the request certainly never left the process."""
        self._sched._refund(self)

    def release(self) -> None:
        """End the request (frees its in-flight place); ``slot()`` does this on exit."""
        if not self._released:
            self._sched._release(self)

    def __repr__(self) -> str:
        return f"<Permit #{self.seq} {self.tag} {self.lane.name} sent_at={self.sent_at:.3f}>"


class Waiter:
    """One queued request: its ordering key, its future, and what it asks for."""

    __slots__ = ("deadline", "fut", "keepalive", "key", "lane", "objects", "tag")

    def __init__(
        self,
        key: tuple[int, float, int],
        fut: asyncio.Future[Permit],
        lane: Lane,
        tag: str,
        deadline: float | None,
        objects: str | None,
        keepalive: KeepAlive | None,
    ) -> None:
        self.key = key
        self.fut = fut
        self.lane = lane
        self.tag = tag
        self.deadline = deadline
        self.objects = objects
        self.keepalive = keepalive

    def __lt__(self, other: Waiter) -> bool:
        return self.key < other.key


class Slot:
    """``async with sched.slot(...) as permit``: admission on entry, release on exit."""

    __slots__ = ("_args", "_permit", "_sched")

    def __init__(
        self,
        sched: Scheduler,
        lane: Lane,
        tag: str,
        deadline: float | None,
        objects: str | None,
        keepalive: KeepAlive | None,
    ) -> None:
        self._sched = sched
        self._args = (lane, tag, deadline, objects, keepalive)
        self._permit: Permit | None = None

    async def __aenter__(self) -> Permit:
        lane, tag, deadline, objects, keepalive = self._args
        self._permit = await self._sched.acquire(
            lane, tag=tag, deadline=deadline, objects=objects, keepalive=keepalive
        )
        return self._permit

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        p, self._permit = self._permit, None
        if p is not None:
            p.release()
