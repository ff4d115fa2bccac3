"""What a request asks for (:class:`Ask`, in its :class:`Lane`) and where it waits for its
admission (:class:`Queue`, one :class:`Waiter` each).

The queue's order (DESIGN "Rate limits" 5, 6): deadlines first, earliest first (a scroll
continuation must leave within 60 s), then by arrival plus the lane's handicap (``lane *
aging`` s), so that a lower lane goes first among requests of similar age but none
starves; ties keep arrival order. A waiter held by an object's daily quota is *parked*:
it holds no one else up, and rejoins the queue when its quota is back.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from collections.abc import Callable
from enum import IntEnum
from typing import NamedTuple

from asyncwifi.errors import ValidationError
from asyncwifi.ratelimit._keepalive import KeepAlive
from asyncwifi.ratelimit._truth import PARKED, Wait

__all__ = ["PLAIN", "Ask", "Lane", "Queue", "Waiter"]

_LAST = 1 << 62  # an arrival number after every real one (a newcomer queues behind ties)


class Lane(IntEnum):
    """Request classes; a lower lane is served first among waiters of similar age."""

    INTERACTIVE = 0
    SCROLL = 1
    DEFAULT = 2
    BULK = 3


class Ask:
    """What a request asks for (read-only): its ``lane``; its ``tag``, what it is (the
    scheduler's ``used()`` counts by it); a ``deadline`` (clock time) puts it in the
    earliest-deadline-first tier; ``objects`` names the object quota it spends; ``keepalive``
    the open scroll it belongs to."""

    __slots__ = ("deadline", "keepalive", "lane", "objects", "tag")

    def __init__(
        self,
        lane: Lane,
        tag: str = "other",
        deadline: float | None = None,
        objects: str | None = None,
        keepalive: KeepAlive | None = None,
    ) -> None:
        self.lane = lane
        self.tag = tag
        self.deadline = deadline
        self.objects = objects
        self.keepalive = keepalive

    @staticmethod
    def of(
        lane: Lane,
        tag: str | None,
        deadline: float | None,
        objects: str | None,
        keepalive: KeepAlive | None,
    ) -> Ask:
        """The ask for these arguments, checked (bad ones raise ``ValidationError``); a
        plain one (a lane and nothing else) is the lane's shared :data:`PLAIN` ask."""
        if type(lane) is Lane and tag is None and deadline is None and not (objects or keepalive):
            return PLAIN[lane]
        if deadline is not None and not math.isfinite(deadline):
            raise ValidationError(f"deadline must be a finite clock time, got {deadline!r}")
        if tag is not None and (type(tag) is not str or not tag):
            raise ValidationError(f"a tag must be a non-empty string, got {tag!r}")
        objects = objects.lower() if objects else None
        return Ask(Lane(lane), tag or "other", deadline, objects, keepalive)

    def __repr__(self) -> str:
        extra = "".join(
            f", {name}={value!r}"
            for name, value in (("deadline", self.deadline), ("objects", self.objects))
            if value is not None
        )
        scroll = ", keepalive" if self.keepalive is not None else ""
        return f"<Ask {self.lane.name} {self.tag}{extra}{scroll}>"


#: one shared ask per lane for requests that say nothing else (the hot path allocates none)
PLAIN: dict[Lane, Ask] = {lane: Ask(lane) for lane in Lane}


class Waiter(NamedTuple):
    """A queued request, ordered by its unique key (deadline tier, then arrival plus the
    lane's handicap, then arrival order); ``fut`` gets its admission number."""

    key: tuple[int, float, int]
    fut: asyncio.Future[int]
    ask: Ask


class Queue:
    """The requests waiting for admission, in the order the module doc draws: the ``heap``
    of those next in line and those ``parked`` on an object's quota."""

    __slots__ = ("_arrivals", "_last", "aging", "heap", "parked")

    def __init__(self, aging: float) -> None:
        self.aging = aging  #: the handicap in seconds per lane step
        self.heap: list[Waiter] = []
        self.parked: list[Waiter] = []
        self._arrivals = itertools.count()
        self._last = -math.inf  # the latest arrival time (a clock stepping back keeps it)

    def join(self, ask: Ask, now: float, wait: Wait | None) -> Waiter:
        """Queue ``ask``, arriving at ``now`` and held back as ``wait`` says (None: by
        nothing but those ahead)."""
        now = self._last = max(now, self._last)
        seq, deadline = next(self._arrivals), ask.deadline
        key = (0, deadline, seq) if deadline is not None else (1, now + ask.lane * self.aging, seq)
        w = Waiter(key, asyncio.get_running_loop().create_future(), ask)
        if wait is not None and wait.why.kind in PARKED:
            self.parked.append(w)
        else:
            heapq.heappush(self.heap, w)
        return w

    def head(self) -> Waiter | None:
        """The first waiter in line still waiting (those cancelled meanwhile leave)."""
        heap = self.heap
        while heap and heap[0].fut.done():
            heapq.heappop(heap)
        return heap[0] if heap else None

    def leave(self, w: Waiter, park: bool) -> None:
        """``w`` leaves the line: granted, failed, or (``park``) to wait for its object's
        quota without holding anyone up."""
        if self.heap[0] is w:
            heapq.heappop(self.heap)
        else:  # a newcomer went ahead meanwhile
            self.heap.remove(w)
            heapq.heapify(self.heap)
        if park:
            self.parked.append(w)

    def unpark(self, now: float, gate: Callable[[float, str | None], Wait | None]) -> float:
        """Parked waiters whose quota ``gate`` says is back rejoin the line; the time the
        next of the others may (inf: none)."""
        wake, parked, self.parked = math.inf, self.parked, []
        for w in parked:
            if w.fut.done():
                continue
            wait = gate(now, w.ask.objects)
            if wait is not None and wait.why.kind in PARKED and wait.until > now:
                self.parked.append(w)
                wake = min(wake, wait.until)
            else:
                heapq.heappush(self.heap, w)
        return wake

    def ahead(self, lane: Lane, deadline: float | None, now: float) -> int:
        """How many waiting now would go before a request entering now (``lane``, or with
        ``deadline``)."""
        key = (0, deadline, _LAST) if deadline is not None else (1, now + lane * self.aging, _LAST)
        return sum(1 for w in self.heap if w.key < key and not w.fut.done())

    def fail(self, exc: Exception) -> None:
        """Every waiter gets ``exc``: none hangs."""
        for w in [*self.heap, *self.parked]:
            if not w.fut.done():
                w.fut.set_exception(exc)
        self.heap[:] = self.parked[:] = []

    def __len__(self) -> int:
        return len(self.heap) + len(self.parked)
