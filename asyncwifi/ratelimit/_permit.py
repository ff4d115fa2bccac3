"""What a caller holds: a ``Lane``, a ``Permit`` once admitted, the ``async with`` slot.

The waiter record (``Waiter``) is the queue's entry: its key orders the queue (deadline
tier, then arrival plus the lane's handicap, then arrival order).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from enum import IntEnum
from types import TracebackType
from typing import Protocol

from asyncwifi.ratelimit._headers import RateLimitHeaders
from asyncwifi.ratelimit._keepalive import KeepAlive

__all__ = ["HeadersLike", "Lane", "Permit", "Slot", "Waiter"]

HeadersLike = Mapping[str, str] | RateLimitHeaders | None


class Lane(IntEnum):
    """Request classes; a lower lane is served first among waiters of similar age."""

    INTERACTIVE = 0
    SCROLL = 1
    DEFAULT = 2
    BULK = 3


class Admitter(Protocol):
    """What a permit and a slot call back into (``_admission.AdmissionLoop``); structural,
    so that this module needs nothing of the loop that imports it."""

    def observe(self, status: int, headers: HeadersLike, *, sent_at: float, seq: int) -> None:
        """Feed a response back."""

    def _try_now(
        self,
        lane: Lane,
        deadline: float | None,
        objects: str | None,
        keepalive: KeepAlive | None = None,
    ) -> Permit | None:
        """An admission now, or None."""

    async def _wait(
        self,
        lane: Lane,
        deadline: float | None,
        objects: str | None,
        keepalive: KeepAlive | None = None,
    ) -> Permit:
        """An admission, waited for."""

    def _release(self, p: Permit) -> None:
        """End a request."""

    def _refund(self, p: Permit) -> None:
        """Give an admission back."""


class Permit:
    """An admission: the request may be sent now. ``sent_at`` is the admission time."""

    __slots__ = ("_released", "_sched", "lane", "sent_at", "seq", "ticket")

    def __init__(
        self, sched: Admitter, sent_at: float, seq: int, ticket: object, lane: Lane
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
        return f"<Permit #{self.seq} {self.lane.name} sent_at={self.sent_at:.3f}>"


class Waiter:
    """One queued request: its ordering key, its future, and what it needs."""

    __slots__ = ("deadline", "fut", "keepalive", "key", "lane", "objects")

    def __init__(
        self,
        key: tuple[int, float, int],
        fut: asyncio.Future[Permit],
        lane: Lane,
        deadline: float | None,
        objects: str | None,
        keepalive: KeepAlive | None = None,
    ) -> None:
        self.key = key
        self.fut = fut
        self.lane = lane
        self.deadline = deadline
        self.objects = objects
        self.keepalive = keepalive

    def __lt__(self, other: Waiter) -> bool:
        return self.key < other.key


class Slot:
    """``async with sched.slot(...) as permit``: admission on entry, release on exit."""

    __slots__ = ("_deadline", "_keepalive", "_lane", "_objects", "_permit", "_sched")

    def __init__(
        self,
        sched: Admitter,
        lane: Lane,
        deadline: float | None,
        objects: str | None,
        keepalive: KeepAlive | None = None,
    ) -> None:
        self._sched = sched
        self._lane = lane
        self._deadline = deadline
        self._objects = objects
        self._keepalive = keepalive
        self._permit: Permit | None = None

    async def __aenter__(self) -> Permit:
        s = self._sched
        p = s._try_now(self._lane, self._deadline, self._objects, self._keepalive)
        if p is None:
            p = await s._wait(self._lane, self._deadline, self._objects, self._keepalive)
        self._permit = p
        return p

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        p, self._permit = self._permit, None
        if p is not None:
            self._sched._release(p)
