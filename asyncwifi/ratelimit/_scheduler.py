"""The asyncio scheduler: every request waits here for a slot (DESIGN "Rate limits").

Waiters sit in one priority queue: requests with a deadline first, earliest deadline first
(DESIGN 5: a scroll continuation must leave within 60 s); then the others by *arrival time
plus their lane's handicap* (``lane * aging`` seconds), so a lower lane goes first among
requests of similar age but no waiter starves (DESIGN 6): a bulk request is served before
any interactive one that arrived more than ``3 * aging`` after it. Ties keep arrival order,
so hand-off is FIFO within a lane and a new caller never passes a waiter. Deadline requests
are not aged: they can hold the lanes back only while they alone use the whole budget (one
continuation per open scroll; ``can_meet`` keeps new scrolls from starting when it is short).

Exactly one timer (a task sleeping on the injected clock) wakes the queue's head when the
logs, a server pause or a server cap next allow it; a finished request wakes it when the
in-flight bound was the obstacle. A waiter cancelled before its grant leaves the queue; one
cancelled after its grant but before it resumed gives the admission back (refund).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from enum import IntEnum
from types import TracebackType
from typing import Literal

from asyncwifi._clock import Clock, SystemClock
from asyncwifi.errors import ClientStateError, QuotaExhaustedError, ValidationError
from asyncwifi.ratelimit._core import Effect, RateCore
from asyncwifi.ratelimit._headers import RateLimitHeaders
from asyncwifi.ratelimit._limits import Limits
from asyncwifi.ratelimit._snapshot import QuotaSnapshot, ThrottleEvent, WindowSnapshot
from asyncwifi.ratelimit._store import MemoryStore, Store

__all__ = ["Lane", "Permit", "Scheduler"]

_INF = math.inf
_LAST = 1 << 62  # an arrival number after every real one (a newcomer queues behind ties)
HeadersLike = Mapping[str, str] | RateLimitHeaders | None


class Lane(IntEnum):
    """Request classes; a lower lane is served first among waiters of similar age."""

    INTERACTIVE = 0
    SCROLL = 1
    DEFAULT = 2
    BULK = 3


class Permit:
    """An admission: the request may be sent now. ``sent_at`` is the admission time."""

    __slots__ = ("_released", "_sched", "lane", "sent_at", "seq", "ticket")

    def __init__(
        self, sched: Scheduler, sent_at: float, seq: int, ticket: object, lane: Lane
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


class _Waiter:
    __slots__ = ("deadline", "fut", "key", "lane", "objects")

    def __init__(
        self,
        key: tuple[int, float, int],
        fut: asyncio.Future[Permit],
        lane: Lane,
        deadline: float | None,
        objects: str | None,
    ) -> None:
        self.key = key
        self.fut = fut
        self.lane = lane
        self.deadline = deadline
        self.objects = objects

    def __lt__(self, other: _Waiter) -> bool:
        return self.key < other.key


class _Slot:
    """``async with sched.slot(...) as permit``: admission on entry, release on exit."""

    __slots__ = ("_deadline", "_lane", "_objects", "_permit", "_sched")

    def __init__(
        self, sched: Scheduler, lane: Lane, deadline: float | None, objects: str | None
    ) -> None:
        self._sched = sched
        self._lane = lane
        self._deadline = deadline
        self._objects = objects
        self._permit: Permit | None = None

    async def __aenter__(self) -> Permit:
        s = self._sched
        p = s._try_now(self._lane, self._deadline, self._objects)
        if p is None:
            p = await s._wait(self._lane, self._deadline, self._objects)
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


class Scheduler:
    """Admits requests so that no window of any limit ever holds more than its count.

    ``on_exhausted`` decides what happens when the day quota (or a declared object's
    quota) is spent: ``"wait"`` until it resets (at most ``max_quota_wait`` seconds, else
    :class:`~asyncwifi.errors.QuotaExhaustedError`), or ``"raise"`` at once, without sending.
    ``max_in_flight`` bounds requests between admission and release (``None``: no bound).
    ``aging`` is the handicap in seconds per lane step (default: the shortest period).
    ``paced_recovery`` is how many periods paced mode lasts after the last unexpected 429.
    """

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        store: Store | None = None,
        clock: Clock | None = None,
        on_exhausted: Literal["wait", "raise"] = "wait",
        max_quota_wait: float | None = None,
        max_in_flight: int | None = 16,
        logger: logging.Logger | None = None,
        on_throttle: Callable[[ThrottleEvent], None] | None = None,
        aging: float | None = None,
        paced_recovery: float = 60.0,
    ) -> None:
        if on_exhausted not in ("wait", "raise"):
            raise ValidationError(f"on_exhausted must be 'wait' or 'raise', got {on_exhausted!r}")
        if max_quota_wait is not None and not max_quota_wait >= 0:
            raise ValidationError(f"max_quota_wait must be >= 0 or None, got {max_quota_wait!r}")
        if max_in_flight is not None and (
            isinstance(max_in_flight, bool)
            or not isinstance(max_in_flight, int)
            or max_in_flight < 1
        ):
            raise ValidationError(
                f"max_in_flight must be an int >= 1 or None, got {max_in_flight!r}"
            )
        if aging is not None and not aging > 0:
            raise ValidationError(f"aging must be > 0 seconds, got {aging!r}")
        if not paced_recovery > 0:
            raise ValidationError(f"paced_recovery must be > 0 periods, got {paced_recovery!r}")
        self.limits = limits if limits is not None else Limits()
        specs = self.limits.windows()
        self._core = RateCore(specs, paced_recovery=paced_recovery)
        self._store: Store = store if store is not None else MemoryStore()
        self._store.bind(specs)
        self._store.listen(self._store_event)
        self._sync = self._store.synchronous
        self._fast = self._sync  # the fast path is open (synchronous store, not closed)
        self._clock: Clock = clock if clock is not None else SystemClock()
        # a day window that frees within this horizon is pacing, not a spent quota
        self._pacing_horizon = max(
            (s.span for s in specs if s.period < self._core.day_period), default=0.0
        )
        self._last_arrival = -_INF
        self._aging = aging if aging is not None else (specs[0].period if specs else 60.0)
        self._on_exhausted = on_exhausted
        self._max_quota_wait = max_quota_wait
        self._max_in_flight = max_in_flight
        self._log = logger if logger is not None else logging.getLogger("asyncwifi.ratelimit")
        self._on_throttle = on_throttle
        self._heap: list[_Waiter] = []
        self._parked: list[_Waiter] = []
        self._arrivals = itertools.count()
        self._in_flight = 0
        self._closed = False
        # the one timer (memory store) / the pump (shared stores)
        self._timer: asyncio.Task[None] | None = None
        self._timer_at = _INF
        self._pump: asyncio.Task[None] | None = None
        self._poke_fut: asyncio.Future[None] | None = None
        self._poked = False
        self._exhausted_noted = -_INF

    # -- public API ------------------------------------------------------------------------

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def store(self) -> Store:
        return self._store

    def slot(
        self,
        lane: Lane = Lane.DEFAULT,
        deadline: float | None = None,
        objects: str | None = None,
    ) -> _Slot:
        """Wait for admission (``async with``); the permit's in-flight place ends on exit.

        ``deadline`` (clock time) puts the request in the earliest-deadline-first tier;
        ``objects`` names the object quota the request spends (``"hotspots"``).
        """
        if type(lane) is not Lane:
            lane = Lane(lane)
        if deadline is not None and not math.isfinite(deadline):
            raise ValidationError(f"deadline must be a finite clock time, got {deadline!r}")
        return _Slot(self, lane, deadline, objects.lower() if objects else None)

    async def acquire(
        self,
        lane: Lane = Lane.DEFAULT,
        *,
        deadline: float | None = None,
        objects: str | None = None,
    ) -> Permit:
        """Wait for admission without a context manager; call ``permit.release()`` after."""
        if type(lane) is not Lane:
            lane = Lane(lane)
        if deadline is not None and not math.isfinite(deadline):
            raise ValidationError(f"deadline must be a finite clock time, got {deadline!r}")
        if objects:
            objects = objects.lower()
        p = self._try_now(lane, deadline, objects)
        return p if p is not None else await self._wait(lane, deadline, objects)

    def observe(
        self,
        status: int,
        headers: HeadersLike,
        *,
        sent_at: float | None = None,
        seq: int | None = None,
    ) -> None:
        """Apply a response's status and headers (``sent_at``: when it was admitted)."""
        h = (
            headers
            if isinstance(headers, RateLimitHeaders)
            else RateLimitHeaders.from_headers(headers)
        )
        if status != 429 and h.empty:
            return
        now = self._clock.now()
        effects = self._core.observe(
            now, status, h, sent_at=now if sent_at is None else sent_at, seq=seq
        )
        self._apply(effects, now)
        if self._heap or self._parked:
            self._kick()

    def earliest_admission(self, lane: Lane = Lane.DEFAULT, *, objects: str | None = None) -> float:
        """Clock time at which a request entering now in ``lane`` could be admitted.

        An estimate: it counts the waiters that would go first and assumes each goes as
        early as the limits allow (it cannot foresee responses, 429s or newer arrivals).
        """
        now = self._clock.now()
        key = (1, now + int(lane) * self._aging, _LAST)
        ahead = sum(1 for w in self._heap if w.key < key and not w.fut.done())
        return self._project(now, ahead, objects)

    def can_meet(
        self, deadline: float, lane: Lane = Lane.SCROLL, *, objects: str | None = None
    ) -> bool:
        """Could a request with this deadline, entering now, be admitted before it?"""
        now = self._clock.now()
        key = (0, deadline, _LAST)
        ahead = sum(1 for w in self._heap if w.key < key and not w.fut.done())
        return self._project(now, ahead, objects) <= deadline

    @property
    def quota(self) -> QuotaSnapshot:
        """A snapshot of what is known: limits, remaining per window, resets, and sources."""
        now = self._clock.now()
        core = self._core
        usage = self._store.usage(now)
        gate, _ = core.gate(now)
        windows: dict[str, WindowSnapshot] = {}
        for spec in self.limits.windows():
            u = usage.get(spec.name)
            count = core.count(spec.name)
            used = u.used if u is not None else 0
            local = max(0, min(count, u.limit if u is not None else count) - used)
            next_at = max(gate, u.next_at if u is not None else now)
            server = core.server_view(spec.name, now)
            reset_at: float | None
            source: Literal["server", "local"]
            if server is not None and server[0] <= local:
                remaining, reset_at, source = server[0], server[1], "server"
                if remaining == 0:
                    next_at = max(next_at, server[1])
            else:
                remaining, source = local, "local"
                reset_at = u.reset_at if u is not None else None
            windows[spec.name] = WindowSnapshot(
                spec.name,
                count,
                remaining,
                reset_at,
                source,
                used=used,
                next_at=next_at,
                paced=spec.name in core.paced_until,
            )
        objects = {
            name: WindowSnapshot(
                name,
                o.limit,
                o.remaining,
                o.window_end,
                "server",
                next_at=max(now, o.blocked_until),
            )
            for name, o in core.objects.items()
            if now < o.window_end or o.blocked_until > now
        }
        paced_until = max(core.paced_until.values(), default=None)
        return QuotaSnapshot(
            taken_at=now,
            limits=self.limits,
            windows=windows,
            objects=objects,
            paused_until=core.pause_until if core.pause_until > now else None,
            pause_reason=core.pause_reason if core.pause_until > now else "",
            mode="paced" if core.paced_until else "exact",
            paced_until=paced_until,
            store=self._store.status,
            degraded=self._store.degraded,
            in_flight=self._in_flight,
            waiting=sum(1 for w in self._heap if not w.fut.done())
            + sum(1 for w in self._parked if not w.fut.done()),
        )

    @property
    def in_flight(self) -> int:
        return self._in_flight

    async def aclose(self) -> None:
        """Stop: every waiter gets ClientStateError (nothing was sent); timers end."""
        if self._closed:
            return
        self._closed = True
        self._fast = False
        err = "the rate-limit scheduler was closed while this request waited; nothing was sent"
        for w in [*self._heap, *self._parked]:
            if not w.fut.done():
                w.fut.set_exception(ClientStateError(err))
        self._heap.clear()
        self._parked.clear()
        tasks = [t for t in (self._timer, self._pump) if t is not None]
        self._timer = self._pump = None
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t
        # the last scheduler using a store closes it (a shared store stays open for the rest)
        if self._store.unlisten(self._store_event):
            await self._store.aclose()

    async def __aenter__(self) -> Scheduler:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return (
            f"<Scheduler {self._store.status} in_flight={self._in_flight}"
            f" waiting={len(self._heap) + len(self._parked)}>"
        )

    # -- admission -------------------------------------------------------------------------

    def _try_now(self, lane: Lane, deadline: float | None, objects: str | None) -> Permit | None:
        """The fast path: nobody waiting, room in flight and in every window, right now."""
        if self._heap or not self._fast:
            if self._closed:
                raise ClientStateError("the rate-limit scheduler is closed")
            return None
        mif = self._max_in_flight
        if mif is not None and self._in_flight >= mif:
            return None
        now = self._clock.now()
        core = self._core
        if core.paced_until:
            self._apply(core.tick(now), now)
        if core.pause_until > now or core.seq >= core.cap_floor or objects is not None:
            t, why = core.gate(now, objects)
            if t > now:
                err = self._exhausted(now, t, why)
                if err is not None:
                    raise err
                return None
        ticket = self._store.try_acquire(now)
        if ticket is None:
            err = self._exhausted(now, *self._store.next_free(now))
            if err is not None:
                raise err
            return None
        self._in_flight += 1
        core.seq = seq = core.seq + 1  # core.admitted(now), inlined: the hot path
        core.recent.append(now)
        return Permit(self, now, seq, ticket, lane)

    def _grant(self, now: float, ticket: object, lane: Lane) -> Permit:
        self._in_flight += 1
        return Permit(self, now, self._core.admitted(now), ticket, lane)

    def _ready(self, now: float, objects: str | None) -> tuple[float, str]:
        t, why = self._core.gate(now, objects)
        s, swhy = self._store.next_free(max(t, now))
        return (s, swhy) if s > t else (t, why)

    async def _wait(self, lane: Lane, deadline: float | None, objects: str | None) -> Permit:
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
        w = _Waiter(key, fut, lane, deadline, objects)
        heapq.heappush(self._heap, w)
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
            self._store.refund(ticket)
            if (self._heap or self._parked) and not self._closed:
                self._kick()

    def _exhausted(self, now: float, t: float, why: str) -> QuotaExhaustedError | None:
        """The error to raise if ``why`` is a spent quota that the policy will not wait for."""
        if t <= now:
            return None
        if why.startswith("object:"):
            limit = why[7:]
        elif why == "day":
            limit = "day"
            if t - now <= self._pacing_horizon:
                return None  # the day window frees within a minute: that is pacing, not exhaustion
        else:
            return None
        if self._on_exhausted == "wait" and (
            self._max_quota_wait is None or t - now <= self._max_quota_wait
        ):
            if limit == "day" and t > self._exhausted_noted:
                self._exhausted_noted = t
                self._log.warning(
                    "day quota spent: requests wait until %s (in %.0f s)", _fmt(t), t - now
                )
            return None
        what = "day quota" if limit == "day" else f"{limit} object quota"
        return QuotaExhaustedError(
            f"the {what} is spent; it is expected back at {_fmt(t)} (in {t - now:.0f} s);"
            " nothing was sent",
            reset_at=t,
            limit=limit,
        )

    def _kick(self) -> None:
        """Re-examine the queue's head now (grants whatever can go, re-arms the timer)."""
        if self._sync:
            wake = self._service()
            if wake is not None:
                self._arm(wake)
        elif self._pump is None:
            self._pump = asyncio.get_running_loop().create_task(self._pump_loop())
        elif self._poke_fut is not None and not self._poke_fut.done():
            self._poke_fut.set_result(None)
        else:
            self._poked = True

    def _head(self, now: float) -> tuple[_Waiter | None, float, str, float]:
        """Drop dead waiters, park object-blocked ones, fail exhausted ones.

        Returns (head that is not blocked on objects, its ready time, why, earliest parked
        wake-up); head is None when the queue is empty or the in-flight bound is reached.
        """
        heap, core = self._heap, self._core
        wake = _INF
        if self._parked:
            keep = []
            for w in self._parked:
                if w.fut.done():
                    continue
                t, why = core.gate(now, w.objects)
                if why.startswith("object:") and t > now:
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
                return None, _INF, "", wake
            t, why = core.gate(now, w.objects)
            if t <= now:
                s, swhy = self._store.next_free(now)
                if s > now:
                    t, why = s, swhy
            if t > now:
                err = self._exhausted(now, t, why)
                if err is not None:
                    heapq.heappop(heap)
                    w.fut.set_exception(err)
                    continue
                if why.startswith("object:"):
                    heapq.heappop(heap)
                    self._parked.append(w)
                    wake = min(wake, t)
                    continue
            return w, t, why, wake
        return None, _INF, "", wake

    def _service(self) -> float | None:
        """Synchronous stores: grant every waiter that can go now; returns the next wake time."""
        now = self._clock.now()
        core, store, heap = self._core, self._store, self._heap
        if core.paced_until:
            self._apply(core.tick(now), now)
        while True:
            w, t, _why, wake = self._head(now)
            if w is None:
                return None if wake == _INF else wake
            if t > now:
                return min(t, wake)
            ticket = store.try_acquire(now)
            if ticket is None:  # another scheduler shares the store and took the room
                return min(store.next_free(now)[0], wake)
            heapq.heappop(heap)
            w.fut.set_result(self._grant(now, ticket, w.lane))

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
        """Shared stores: one task grants in order, asking the store (over I/O) each time."""
        try:
            while not self._closed:
                wake = await self._service_async()
                if wake is None and not self._heap and not self._parked:
                    return
                await self._pump_wait(wake)
        except Exception as exc:
            # a store bug must not leave waiters hanging forever: they get the error
            self._log.exception("rate-limit store failed; failing the waiting requests")
            for w in [*self._heap, *self._parked]:
                if not w.fut.done():
                    w.fut.set_exception(exc)
            self._heap.clear()
            self._parked.clear()
        finally:
            self._pump = None

    async def _service_async(self) -> float | None:
        core, store, heap = self._core, self._store, self._heap
        floor = -_INF
        while not self._closed:
            now = self._clock.now()
            if core.paced_until:
                self._apply(core.tick(now), now)
            w, t, _why, wake = self._head(now)
            if w is None:
                return None if wake == _INF else wake
            t = max(t, floor)  # the store's own retry time, should its estimate lag behind
            if t > now:
                return min(t, wake)
            ticket, at = await store.acquire(now)
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
            w.fut.set_result(self._grant(max(at, now), ticket, w.lane))
        return None

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

    # -- projections -----------------------------------------------------------------------

    def _project(self, now: float, ahead: int, objects: str | None) -> float:
        t0, _ = self._core.gate(now, objects)
        times = self._store.project(max(now, t0), ahead + 1)
        for allowed, end in self._core.caps(now):
            for j in range(max(0, allowed), len(times)):
                if times[j] < end:
                    times[j] = end
        return times[ahead]

    # -- effects ---------------------------------------------------------------------------

    def _apply(self, effects: list[Effect], now: float) -> None:
        for e in effects:
            if e.kind == "pause" and e.until is not None:
                self._store.pause(e.until, now)
                self._log.warning(
                    "%s; every request waits %.1f s (until %s)",
                    e.reason,
                    e.until - now,
                    _fmt(e.until),
                )
            elif e.kind == "paced":
                self._store.configure(e.name, paced=True)
                self._log.warning("%s (until %s)", e.reason, _fmt(e.until or now))
            elif e.kind == "exact":
                self._store.configure(e.name, paced=False)
                self._log.info("back to exact mode on the %s limit: %s", e.name, e.reason)
            elif e.kind == "limit" and e.count is not None:
                self._store.configure(e.name, count=e.count)
                self._log.warning("lowering the %s limit: %s", e.name, e.reason)
            elif e.kind in ("exhausted", "object"):
                self._log.warning("%s (until %s)", e.reason, _fmt(e.until or now))
            self._throttle(ThrottleEvent(e.kind, now, e.name, e.until, e.reason))

    def _throttle(self, event: ThrottleEvent) -> None:
        if self._on_throttle is not None:
            try:
                self._on_throttle(event)
            except Exception:
                self._log.exception("on_throttle callback failed")

    def _store_event(self, kind: str, reason: str) -> None:
        now = self._clock.now()
        if kind == "fallback":
            self._log.warning(
                "rate-limit store unavailable, using a conservative local limit: %s", reason
            )
            self._throttle(ThrottleEvent("fallback", now, reason=reason))
        elif kind == "restored":
            self._log.info("rate-limit store back: %s", reason)
            self._throttle(ThrottleEvent("restored", now, reason=reason))


def _fmt(t: float) -> str:
    try:
        return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return f"{t:.0f}"
