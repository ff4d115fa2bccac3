"""The asyncio scheduler: every request waits here for its admission (DESIGN "Rate limits").

One class in aiolimiter's shape: one admission path (``_admit``: what the server said, then
the store, awaited whatever it is), one queue and one timer. A caller that may go at once
never queues; the others wait in one heap: deadlines first, earliest first (DESIGN 5: a
scroll continuation must leave within 60 s), then by arrival plus the lane's handicap
(``lane * aging`` s), so a lower lane goes first among requests of similar age but none
starves (DESIGN 6); ties keep arrival order. The timer, one task on the clock, grants the
head whenever it may go; a release, a response or a refund re-arms it for now.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import math
import uuid
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Literal, overload

from asyncwifi._clock import Clock, SystemClock
from asyncwifi.errors import ClientStateError, QuotaExhaustedError, ValidationError
from asyncwifi.ratelimit._headers import RateLimitHeaders
from asyncwifi.ratelimit._keepalive import KeepAlive
from asyncwifi.ratelimit._limits import Limits
from asyncwifi.ratelimit._permit import (
    DEFAULT_TAG,
    Ask,
    HeadersLike,
    Lane,
    Permit,
    Slot,
    Waiter,
    ask,
)
from asyncwifi.ratelimit._snapshot import QuotaSnapshot, ThrottleEvent, report, take_snapshot
from asyncwifi.ratelimit._store import MemoryStore, RateStore
from asyncwifi.ratelimit._truth import NOW, Reason, ServerTruth

__all__ = ["Scheduler"]

_INF = math.inf
_LAST = 1 << 62  # an arrival number after every real one (a newcomer queues behind ties)
_NO_HOLD: tuple[Reason, KeepAlive | None] = (NOW, None)


class Scheduler:
    """Admits requests so that no window of any limit ever holds more than its count.

    ``on_exhausted``: when a quota (the day, an object's) is spent, ``"wait"`` for its reset
    (at most ``max_quota_wait`` s, else :class:`~asyncwifi.errors.QuotaExhaustedError`) or
    ``"raise"`` at once, sending nothing. ``max_in_flight`` bounds requests between admission
    and release; ``aging`` is the handicap in seconds per lane step (default: the shortest
    period); paced mode lasts ``paced_recovery`` periods after the last unexpected 429.
    """

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        store: RateStore | None = None,
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
        if max_in_flight is not None and (type(max_in_flight) is not int or max_in_flight < 1):
            raise ValidationError(f"max_in_flight must be an int >= 1 or None: {max_in_flight!r}")
        if not (aging is None or aging > 0) or not paced_recovery > 0:
            raise ValidationError(f"aging, paced_recovery must be > 0: {aging}, {paced_recovery}")
        self.limits = limits if limits is not None else Limits()
        specs = self.limits.windows()
        self._truth = ServerTruth(
            specs,
            paced_recovery=paced_recovery,
            on_exhausted=on_exhausted,
            max_quota_wait=max_quota_wait,
        )
        self._store = store if store is not None else MemoryStore()
        self._store.bind(specs)
        self._clock = clock if clock is not None else SystemClock()
        self._log = logger if logger is not None else logging.getLogger("asyncwifi.ratelimit")
        self._on_throttle = on_throttle
        self._max_in_flight = max_in_flight
        self._aging = aging if aging is not None else (specs[0].period if specs else 60.0)
        self._longest = max(specs, key=lambda s: s.span).name if specs else ""  # for used()
        self._heap: list[Waiter] = []
        self._parked: list[Waiter] = []  # waiting for an object's quota: they hold no one up
        self._arrivals = itertools.count()
        self._last_arrival = -_INF
        self._in_flight = 0
        self._admitted = 0  # admitted and not refunded: every request sent, logins included
        self._closed = False
        self._busy = 0  # store calls under way
        #: the store's last refusal (why, for which scroll): not asked again before the time
        self._hold_until, self._hold = -_INF, _NO_HOLD
        self._timer: asyncio.Task[None] | None = None
        self._timer_at = _INF
        self._draining = False
        self._degraded: str | None = None

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def store(self) -> RateStore:
        return self._store

    @property
    def in_flight(self) -> int:
        return self._in_flight

    # -- asking ----------------------------------------------------------------------------

    def slot(
        self,
        lane: Lane = Lane.DEFAULT,
        deadline: float | None = None,
        objects: str | None = None,
        keepalive: KeepAlive | None = None,
        *,
        tag: str | None = None,
    ) -> Slot:
        """Wait for admission (``async with``); the permit's in-flight place ends on exit.

        ``tag`` says what the request is (``"events"``, ``"login"``; default ``"other"``;
        see :meth:`used`); a ``deadline`` (clock time) puts it in the earliest-deadline-first
        tier; ``objects`` names the object quota it spends (``"hotspots"``); ``keepalive``
        the open scroll it belongs to (:meth:`keepalive`).
        """
        return Slot(self, ask(lane, tag, deadline, objects, keepalive))

    def acquire(
        self,
        lane: Lane = Lane.DEFAULT,
        *,
        tag: str | None = None,
        deadline: float | None = None,
        objects: str | None = None,
        keepalive: KeepAlive | None = None,
    ) -> Coroutine[None, None, Permit]:
        """Wait for admission (await it) without a context manager; ``permit.release()``
        after. Bad arguments raise at the call."""
        if type(lane) is Lane and tag is None and deadline is None and not objects:
            return self._admit((lane, DEFAULT_TAG, None, None, keepalive), True)
        return self._admit(ask(lane, tag, deadline, objects, keepalive), True)

    @overload
    async def _admit(self, ask: Ask, caller: Literal[True]) -> Permit: ...
    @overload
    async def _admit(self, ask: Ask, caller: Literal[False]) -> Permit | tuple[float, Reason]: ...
    async def _admit(self, ask: Ask, caller: bool) -> Permit | tuple[float, Reason]:
        """The one admission path: a permit, or when to ask again and why. A ``caller``
        admits itself only when nobody waits, else (or when refused) it waits its turn."""
        if caller:
            if self._closed:
                raise ClientStateError("the rate-limit scheduler is closed")
            mif = self._max_in_flight
            if self._heap or self._busy or (mif is not None and self._in_flight >= mif):
                return await self._wait(ask, None, None)
        # a caller refused after all queues where it arrived, before those that came meanwhile
        arrival = next(self._arrivals) if caller else 0
        now, truth, keepalive = self._clock.now(), self._truth, ask[4]
        if truth.paced_until:
            self._apply(truth.tick(now), now)
        refused: tuple[float, Reason]
        gated = truth.pause_until > now or truth.seq >= truth.cap_floor or ask[3] is not None
        if gated and (refused := truth.gate(now, ask[3]))[0] > now:
            pass  # what the server said holds it back
        elif now < self._hold_until and self._hold[1] is keepalive:
            refused = self._hold_until, self._hold[0]  # so does the store's last answer
        else:
            self._busy += 1
            try:
                ticket, at, name = await self._store.acquire(now, ask[1], keepalive)
            finally:
                self._busy -= 1
                if self._heap and not self._draining:  # others queued while the store decided
                    self._arm(self._clock.now())
            if self._store.degraded is not self._degraded:
                self._store_changed(now)
            if ticket is not None:
                self._in_flight += 1
                self._admitted += 1
                if at < now:
                    at = now  # the store's time line may be ahead of ours (never behind)
                truth.seq = seq = truth.seq + 1
                truth.recent.append(at)
                return Permit(self, at, seq, ticket, ask[0], ask[1])
            why = Reason(name) if name in ("", "pause", "keepalive") else Reason("window", name)
            self._hold_until, self._hold = at, (why, keepalive)
            refused = at, why
        return await self._wait(ask, refused, (now, arrival)) if caller else refused

    async def _wait(
        self, ask: Ask, refused: tuple[float, Reason] | None, arrived: tuple[float, int] | None
    ) -> Permit:
        now, seq = arrived or (self._clock.now(), next(self._arrivals))
        t, why = self._truth.gate(now, ask[3]) if refused is None else refused
        err = self._exhausted(now, t, why)
        if err is not None:
            raise err
        now = self._last_arrival = max(now, self._last_arrival)  # a clock stepping back
        deadline = ask[2]
        key = (0, deadline, seq) if deadline is not None else (1, now + ask[0] * self._aging, seq)
        w = Waiter(key, asyncio.get_running_loop().create_future(), ask)
        if why.kind == "object":
            self._parked.append(w)
        else:
            heapq.heappush(self._heap, w)
        if why.kind == "object" or self._heap[0] is w:
            self._arm(t)
        try:
            return await w.fut
        except asyncio.CancelledError:
            if w.fut.done() and not w.fut.cancelled() and w.fut.exception() is None:
                self._refund(w.fut.result())  # granted, then cancelled before it resumed
                self._release(w.fut.result())
            w.fut.cancel()
            self._arm(self._clock.now())
            raise

    def _release(self, p: Permit) -> None:
        if not p._released:
            p._released = True
            self._in_flight -= 1
            mif = self._max_in_flight
            if self._heap and mif is not None and self._in_flight + 1 >= mif:
                self._arm(self._clock.now())

    def _refund(self, p: Permit) -> None:
        if p.ticket is not None:
            ticket, p.ticket = p.ticket, None
            self._admitted -= 1
            self._store.refund(ticket, p.tag)
            self._hold_until = -_INF
            self._arm(self._clock.now())

    def _exhausted(self, now: float, t: float, why: Reason) -> QuotaExhaustedError | None:
        """The error to raise if ``why`` is a spent quota the policy will not wait for."""
        err, note = self._truth.exhausted(now, t, why)
        if note:
            self._log.warning("%s", note)
        return err

    # -- the timer -------------------------------------------------------------------------

    def _arm(self, at: float) -> None:
        """Keep one timer, at the earliest time the queue needs looking at."""
        if self._closed or self._draining or not (self._heap or self._parked):
            return
        if self._timer is not None:
            if self._timer_at <= at:
                return
            self._timer.cancel()
        self._timer_at = at
        self._timer = asyncio.get_running_loop().create_task(self._fire(at))

    async def _fire(self, at: float) -> None:
        if at > self._clock.now():
            await self._clock.sleep(at - self._clock.now())  # _arm may cancel it here
        self._draining, wake = True, _INF  # from here on, _arm leaves it be
        try:
            if not self._busy:  # else the caller's admission re-arms it when done
                wake = await self._drain()
        except Exception as exc:
            self._log.exception("rate-limit store failed; failing the waiting requests")
            self._fail(exc)
        finally:
            self._draining, self._timer, self._timer_at = False, None, _INF
        if wake < _INF:
            self._arm(wake)

    async def _drain(self) -> float:
        """Grant every waiter that can go now; returns the next time to look (inf: none)."""
        heap, truth = self._heap, self._truth
        while not self._closed:
            now, wake, parked, self._parked = self._clock.now(), _INF, self._parked, []
            for w in parked:  # waiters whose object quota is back rejoin the queue
                t, why = truth.gate(now, w.ask[3])
                if why.kind == "object" and t > now and not w.fut.done():
                    self._parked.append(w)
                    wake = min(wake, t)
                elif not w.fut.done():
                    heapq.heappush(heap, w)
            while heap and heap[0].fut.done():
                heapq.heappop(heap)
            mif = self._max_in_flight
            if not heap or (mif is not None and self._in_flight >= mif):
                return wake  # a release re-arms the timer
            w = heap[0]
            got = await self._admit(w.ask, False)
            err = None
            if isinstance(got, Permit) and w.fut.done():  # cancelled while the store decided
                self._refund(got)
                self._release(got)
                continue
            if not isinstance(got, Permit):
                if got[0] <= now:
                    return now  # the store asks to decide again: on the next turn of the loop
                err = self._exhausted(now, *got)
                if err is None and got[1].kind != "object":
                    return min(got[0], wake)
            if heap[0] is w:
                heapq.heappop(heap)
            else:  # a newcomer went ahead while the store decided
                heap.remove(w)
                heapq.heapify(heap)
            if isinstance(got, Permit):
                w.fut.set_result(got)
            elif err is not None:
                w.fut.set_exception(err)
            else:
                self._parked.append(w)
        return _INF

    def _fail(self, exc: Exception) -> None:
        """Every waiter gets ``exc`` (a closed scheduler, a failing store): none hangs."""
        for w in [*self._heap, *self._parked]:
            if not w.fut.done():
                w.fut.set_exception(exc)
        self._heap.clear()
        self._parked.clear()

    # -- what the server said --------------------------------------------------------------

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
        sent = now if sent_at is None else sent_at
        self._apply(self._truth.observe(now, status, h, sent_at=sent, seq=seq), now)
        self._arm(now)

    def _apply(self, events: list[ThrottleEvent], now: float) -> None:
        """Carry out what the server's state asks for, log it, and tell ``on_throttle``."""
        for e in events:
            if e.kind == "pause" and e.until is not None:
                self._store.pause(e.until, now)
            elif e.kind in ("paced", "exact", "limit"):
                paced = None if e.kind == "limit" else e.kind == "paced"
                self._store.configure(e.name, count=e.count, paced=paced)
                self._hold_until = -_INF
            report(e, self._log, self._on_throttle)

    def _store_changed(self, now: float) -> None:
        """The store went to its conservative fallback, or came back: say so."""
        was, self._degraded = self._degraded, self._store.degraded
        if self._degraded is not None:
            why = (
                f"rate-limit store unavailable, using a conservative local limit: {self._degraded}"
            )
            self._apply([ThrottleEvent("fallback", now, reason=why)], now)
        else:
            why = f"rate-limit store back: the shared store is reachable again (was: {was})"
            self._apply([ThrottleEvent("restored", now, reason=why)], now)

    # -- scrolls, projections, counts ------------------------------------------------------

    def keepalive(self, horizon: float) -> KeepAlive:
        """A handle for one scroll: each request made with it keeps a place in the short
        windows for the scroll's next request, due ``horizon`` clock seconds later, until
        :meth:`drop_keepalive` (see ``_keepalive``; shared through the store)."""
        if not (horizon > 0 and math.isfinite(horizon)):
            raise ValidationError(f"a keep-alive horizon must be > 0 seconds, got {horizon!r}")
        return KeepAlive(uuid.uuid4().hex[:16], horizon)

    def drop_keepalive(self, keepalive: KeepAlive) -> None:
        """The scroll ended: its place goes back to everyone else."""
        self._store.drop_keepalive(keepalive.token)
        self._hold_until = -_INF
        self._arm(self._clock.now())

    def earliest_admission(self, lane: Lane = Lane.DEFAULT, *, objects: str | None = None) -> float:
        """Clock time at which a request entering now in ``lane`` could be admitted: an
        estimate that counts the waiters ahead and lets each go as early as the limits allow
        (it cannot foresee responses, 429s or newer arrivals)."""
        now = self._clock.now()
        return self._project(now, (1, now + int(lane) * self._aging, _LAST), objects)

    def can_meet(
        self, deadline: float, lane: Lane = Lane.SCROLL, *, objects: str | None = None
    ) -> bool:
        """Could a request with this deadline, entering now, be admitted before it?"""
        return self._project(self._clock.now(), (0, deadline, _LAST), objects) <= deadline

    def _hint(self) -> float:
        """The store's last refusal, if it holds for anyone (not one scroll's own)."""
        return self._hold_until if self._hold[1] is None else -_INF

    def _project(self, now: float, key: tuple[int, float, int], objects: str | None) -> float:
        ahead = sum(1 for w in self._heap if w.key < key and not w.fut.done())
        t0, hint = self._truth.gate(now, objects)[0], self._hint()
        times = [max(t, hint) for t in self._store.log.project(max(now, t0), ahead + 1)]
        for allowed, end in self._truth.caps(now).values():
            for j in range(max(0, allowed), len(times)):
                times[j] = max(times[j], end)
        return times[ahead]

    @overload
    async def used(self, tag: str, *, window: str | None = None) -> int: ...
    @overload
    async def used(self, tag: None = None, *, window: str | None = None) -> dict[str, int]: ...
    async def used(
        self, tag: str | None = None, *, window: str | None = None
    ) -> int | dict[str, int]:
        """Admissions per tag (or ``tag``'s) in ``window`` (default: the longest, the day):
        what the limiter counts against it now, over its last ``span`` seconds, every
        process's when the store is shared (while ``RedisStore`` is unreachable, this
        process's). A budget giving each kind of request a share of the day reads it here."""
        name = window or self._longest
        if name not in self._truth.specs:
            raise ValidationError(f"no such window {name!r}; there are {list(self._truth.specs)}")
        counts = await self._store.tally(self._clock.now(), name)
        return counts if tag is None else counts.get(tag, 0)

    @property
    def quota(self) -> QuotaSnapshot:
        """A snapshot of what is known: limits, remaining per window, resets, and sources."""
        waiting = sum(1 for w in (*self._heap, *self._parked) if not w.fut.done())
        counts = {"in_flight": self._in_flight, "waiting": waiting, "admitted": self._admitted}
        return take_snapshot(
            self._clock.now(), self.limits, self._truth, self._store, self._hint(), **counts
        )

    async def aclose(self) -> None:
        """Stop: every waiter gets ClientStateError (nothing was sent); the timer ends."""
        if not self._closed:
            self._closed = True
            self._fail(ClientStateError("the rate-limit scheduler was closed; nothing was sent"))
            if self._timer is not None:
                self._timer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._timer
            await self._store.detach()  # the last scheduler using a store closes it

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
        waiting = len(self._heap) + len(self._parked)
        return f"<Scheduler {self._store.status} in_flight={self._in_flight} waiting={waiting}>"
