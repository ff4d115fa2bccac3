"""The admission loop: one queue of waiters, granted in order by one loop for every store.

Waiters sit in one priority queue: requests with a deadline first, earliest deadline first
(DESIGN 5: a scroll continuation must leave within 60 s); then the others by *arrival time
plus their lane's handicap* (``lane * aging`` seconds), so a lower lane goes first among
requests of similar age but no waiter starves (DESIGN 6). Ties keep arrival order, so
hand-off is FIFO within a lane and a new caller never passes a waiter.

``_service`` is the only loop that grants. With a synchronous store (``MemoryStore``) its
awaits never suspend, so it runs to completion inside the call that needs it (a release,
a response, the one timer); with a shared store (``RedisStore``) one pump task runs it and
awaits the store over the network. A waiter cancelled before its grant leaves the queue;
one cancelled after its grant but before it resumed gives the admission back (refund).
"""

from __future__ import annotations

import abc
import asyncio
import heapq
import itertools
import logging
import math
from collections.abc import Coroutine
from typing import Any, Literal

from asyncwifi._clock import Clock
from asyncwifi._instant import format_instant
from asyncwifi.errors import ClientStateError, ConfigurationError, QuotaExhaustedError
from asyncwifi.ratelimit._keepalive import KeepAlive
from asyncwifi.ratelimit._permit import HeadersLike, Lane, Permit, Waiter
from asyncwifi.ratelimit._store import Store
from asyncwifi.ratelimit._truth import Effect, Reason, ServerTruth, Wait

__all__ = ["AdmissionLoop", "fmt_time"]

_INF = math.inf
_NOTHING: tuple[None, float, Reason, float] = (None, _INF, Reason(Wait.NONE), _INF)


def fmt_time(t: float) -> str:
    """A clock time as UTC text for logs and errors."""
    try:
        return format_instant(t, "seconds")
    except (OverflowError, OSError, ValueError):
        return f"{t:.0f}"


def _store_reason(why: str) -> Reason:
    """A store names the window that holds admissions back ("" for none, "pause")."""
    if not why:
        return Reason(Wait.NONE)
    return Reason(Wait.PAUSE) if why == "pause" else Reason(Wait.WINDOW, why)


class AdmissionLoop(abc.ABC):
    """The queue and the loop that grants it; the ``Scheduler`` adds its public face."""

    _truth: ServerTruth
    _store: Store
    _clock: Clock
    _log: logging.Logger

    def _init_queue(
        self,
        *,
        on_exhausted: Literal["wait", "raise"],
        max_quota_wait: float | None,
        max_in_flight: int | None,
        aging: float,
        pacing_horizon: float,
    ) -> None:
        self._sync = self._store.synchronous
        self._fast = self._sync  # the fast path is open (synchronous store, not closed)
        #: a day window that frees within this horizon is pacing, not a spent quota
        self._pacing_horizon = pacing_horizon
        self._last_arrival = -_INF
        self._aging = aging
        self._on_exhausted = on_exhausted
        self._max_quota_wait = max_quota_wait
        self._max_in_flight = max_in_flight
        self._heap: list[Waiter] = []
        self._parked: list[Waiter] = []
        self._arrivals = itertools.count()
        self._in_flight = 0
        #: requests admitted and not refunded (every request sent, the login included)
        self._admitted = 0
        self._closed = False
        # the one timer (synchronous store) / the pump (shared stores)
        self._timer: asyncio.Task[None] | None = None
        self._timer_at = _INF
        self._pump: asyncio.Task[None] | None = None
        self._poke_fut: asyncio.Future[None] | None = None
        self._poked = False
        self._exhausted_noted = -_INF

    @abc.abstractmethod
    def observe(
        self,
        status: int,
        headers: HeadersLike,
        *,
        sent_at: float | None = None,
        seq: int | None = None,
    ) -> None:
        """Apply a response (the scheduler's public method; a permit calls it)."""

    @abc.abstractmethod
    def _apply(self, effects: list[Effect], now: float) -> None:
        """Carry out (and log) what the server's state asks for."""

    # -- entering --------------------------------------------------------------------------

    def _try_now(
        self,
        lane: Lane,
        deadline: float | None,
        objects: str | None,
        keepalive: KeepAlive | None = None,
    ) -> Permit | None:
        """The fast path: nobody waiting, room in flight and in every window, right now."""
        if self._heap or not self._fast:
            if self._closed:
                raise ClientStateError("the rate-limit scheduler is closed")
            return None
        mif = self._max_in_flight
        if mif is not None and self._in_flight >= mif:
            return None
        now = self._clock.now()
        truth = self._truth
        if truth.paced_until:
            self._apply(truth.tick(now), now)
        if truth.pause_until > now or truth.seq >= truth.cap_floor or objects is not None:
            t, why = truth.gate(now, objects)
            if t > now:
                err = self._exhausted(now, t, why)
                if err is not None:
                    raise err
                return None
        ticket = self._store.try_acquire(now, keepalive)
        if ticket is None:
            t, swhy = self._store.next_free(now)
            err = self._exhausted(now, t, _store_reason(swhy))
            if err is not None:
                raise err
            return None
        self._in_flight += 1
        self._admitted += 1
        truth.seq = seq = truth.seq + 1  # truth.admitted(now), inlined: the hot path
        truth.recent.append(now)
        return Permit(self, now, seq, ticket, lane)

    def _ready(self, now: float, objects: str | None) -> tuple[float, Reason]:
        t, why = self._truth.gate(now, objects)
        s, swhy = self._store.next_free(max(t, now))
        return (s, _store_reason(swhy)) if s > t else (t, why)

    async def _wait(
        self,
        lane: Lane,
        deadline: float | None,
        objects: str | None,
        keepalive: KeepAlive | None = None,
    ) -> Permit:
        if self._closed:
            raise ClientStateError("the rate-limit scheduler is closed")
        now = self._clock.now()
        err = self._exhausted(now, *self._ready(now, objects))
        if err is not None:
            raise err
        seq = next(self._arrivals)
        if now < self._last_arrival:
            now = self._last_arrival  # a clock stepping back must not reorder a lane
        self._last_arrival = now
        key = (0, deadline, seq) if deadline is not None else (1, now + lane * self._aging, seq)
        fut: asyncio.Future[Permit] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, Waiter(key, fut, lane, deadline, objects, keepalive))
        self._kick()
        try:
            return await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                # granted, then cancelled before it could resume: give everything back
                p = fut.result()
                self._refund(p)
                self._release(p)
            elif not fut.done():
                fut.cancel()
            if not self._closed:
                self._kick()
            raise

    # -- leaving ---------------------------------------------------------------------------

    def _release(self, p: Permit) -> None:
        if p._released:
            return
        p._released = True
        self._in_flight -= 1
        mif = self._max_in_flight
        if self._heap and mif is not None and self._in_flight + 1 >= mif and not self._closed:
            self._kick()

    def _refund(self, p: Permit) -> None:
        if p.ticket is not None:
            ticket, p.ticket = p.ticket, None
            self._admitted -= 1
            self._store.refund(ticket)
            if (self._heap or self._parked) and not self._closed:
                self._kick()

    def _exhausted(self, now: float, t: float, why: Reason) -> QuotaExhaustedError | None:
        """The error to raise if ``why`` is a spent quota that the policy will not wait for."""
        limit = why.quota
        if t <= now or limit is None:
            return None
        if limit == "day" and t - now <= self._pacing_horizon:
            return None  # the day window frees within a minute: that is pacing, not exhaustion
        if self._on_exhausted == "wait" and (
            self._max_quota_wait is None or t - now <= self._max_quota_wait
        ):
            if limit == "day" and t > self._exhausted_noted:
                self._exhausted_noted = t
                self._log.warning(
                    "day quota spent: requests wait until %s (in %.0f s)", fmt_time(t), t - now
                )
            return None
        what = "day quota" if limit == "day" else f"{limit} object quota"
        return QuotaExhaustedError(
            f"the {what} is spent; it is expected back at {fmt_time(t)} (in {t - now:.0f} s);"
            " nothing was sent",
            reset_at=t,
            limit=limit,
        )

    # -- the loop --------------------------------------------------------------------------

    def _kick(self) -> None:
        """Re-examine the queue's head now (grants whatever can go, re-arms the timer)."""
        if self._sync:
            try:
                wake = _run_now(self._service())
            except Exception as exc:
                self._fail_waiters(exc)
                return
            if wake is not None:
                self._arm(wake)
        elif self._pump is None:
            self._pump = asyncio.get_running_loop().create_task(self._pump_loop())
        elif self._poke_fut is not None and not self._poke_fut.done():
            self._poke_fut.set_result(None)
        else:
            self._poked = True

    def _head(self, now: float) -> tuple[Waiter | None, float, Reason, float]:
        """Drop dead waiters, park object-blocked ones, fail exhausted ones.

        Returns (head that is not blocked on objects, its ready time, why, earliest parked
        wake-up); head is None when the queue is empty or the in-flight bound is reached.
        """
        heap, truth = self._heap, self._truth
        wake = _INF
        if self._parked:
            keep = []
            for w in self._parked:
                if w.fut.done():
                    continue
                t, why = truth.gate(now, w.objects)
                if why.kind is Wait.OBJECT and t > now:
                    keep.append(w)
                    wake = min(wake, t)
                else:
                    heapq.heappush(heap, w)
            self._parked = keep
        mif = self._max_in_flight
        while heap:
            w = heap[0]
            if w.fut.done():
                heapq.heappop(heap)
                continue
            if mif is not None and self._in_flight >= mif:
                return None, _INF, _NOTHING[2], wake
            t, why = truth.gate(now, w.objects)
            if t <= now:
                s, swhy = self._store.next_free(now)
                if s > now:
                    t, why = s, _store_reason(swhy)
            if t > now:
                err = self._exhausted(now, t, why)
                if err is not None:
                    heapq.heappop(heap)
                    w.fut.set_exception(err)
                    continue
                if why.kind is Wait.OBJECT:
                    heapq.heappop(heap)
                    self._parked.append(w)
                    wake = min(wake, t)
                    continue
            return w, t, why, wake
        return None, _INF, _NOTHING[2], wake

    async def _service(self) -> float | None:
        """Grant every waiter that can go now; returns the next time to look, or None."""
        truth, store, heap = self._truth, self._store, self._heap
        floor = -_INF
        while not self._closed:
            now = self._clock.now()
            if truth.paced_until:
                self._apply(truth.tick(now), now)
            w, t, _why, wake = self._head(now)
            if w is None:
                return None if wake == _INF else wake
            t = max(t, floor)  # the store's own retry time, should its estimate lag behind
            if t > now:
                return min(t, wake)
            ticket, at = await store.acquire(now, w.keepalive)
            if ticket is None:
                # re-examine the head with the store's answer (a spent day may fail it now)
                floor = at
                continue
            if self._closed or w.fut.done():
                store.refund(ticket)
                continue
            if heap and heap[0] is w:
                heapq.heappop(heap)
            else:
                heap.remove(w)
                heapq.heapify(heap)
            # admitted at the store's time (the newest time it had seen, if later than ours)
            self._in_flight += 1
            self._admitted += 1
            at = max(at, now)
            w.fut.set_result(Permit(self, at, truth.admitted(at), ticket, w.lane))
        return None

    def _arm(self, at: float) -> None:
        """Keep exactly one timer, at the earliest time someone needs waking."""
        if self._timer is not None:
            if self._timer_at <= at:
                return
            self._timer.cancel()
        self._timer_at = at
        delay = at - self._clock.now()
        self._timer = asyncio.get_running_loop().create_task(self._fire(delay))

    async def _fire(self, delay: float) -> None:
        await self._clock.sleep(delay)
        self._timer, self._timer_at = None, _INF
        if not self._closed:
            self._kick()

    async def _pump_loop(self) -> None:
        """Shared stores: one task runs the loop, asking the store (over I/O) each time."""
        try:
            while not self._closed:
                wake = await self._service()
                if wake is None and not self._heap and not self._parked:
                    return
                await self._pump_wait(wake)
        except Exception as exc:
            self._fail_waiters(exc)
        finally:
            self._pump = None

    def _fail_waiters(self, exc: Exception) -> None:
        """A store bug must not leave waiters hanging forever: each gets the error (called
        from an ``except`` block, so the log carries the traceback)."""
        self._log.exception("rate-limit store failed; failing the waiting requests")
        for w in [*self._heap, *self._parked]:
            if not w.fut.done():
                w.fut.set_exception(exc)
        self._heap.clear()
        self._parked.clear()

    async def _pump_wait(self, wake: float | None) -> None:
        if self._poked:
            self._poked = False
            return
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._poke_fut = fut
        try:
            if wake is None:
                await fut
                return
            sleeper = loop.create_task(self._clock.sleep(wake - self._clock.now()))
            try:
                await asyncio.wait((fut, sleeper), return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeper.cancel()
        finally:
            self._poke_fut = None
            self._poked = False


def _run_now(coro: Coroutine[Any, Any, float | None]) -> float | None:
    """Run the loop to completion here: with a synchronous store it never suspends."""
    try:
        coro.send(None)
    except StopIteration as stop:
        result: float | None = stop.value
        return result
    coro.close()
    raise ConfigurationError(
        "a rate-limit store that says it is synchronous suspended in acquire();"
        " set synchronous = False on it"
    )
