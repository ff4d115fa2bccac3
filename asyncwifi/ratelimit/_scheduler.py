"""The asyncio scheduler: every request waits here for its admission (DESIGN "Rate limits").

One admission path (``_gate``: what the server said, then the store, then ``_admitted``),
one queue, one timer. A caller that may go at once never queues (a store with I/O is asked
by the timer alone); the others wait in one heap: deadlines first, earliest first (DESIGN
5: a scroll continuation must leave within 60 s), then by arrival plus the lane's handicap
(``lane * aging`` s), so a lower lane goes first among requests of similar age but none
starves (DESIGN 6); ties keep arrival order. The timer grants the head whenever it may go;
a release, a response or a refund re-arms it.

Objects are a quota too (spec §8, ``_volume``): the client counts the records each response
carried (:meth:`Scheduler.count_objects`) in the store beside the requests; once the month's
allowance (``Limits.month``) is reached, a request for objects waits for the 1st of the next
month or raises, as ``Limits.on_exhausted`` says, parked like one held by an object quota.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import math
import uuid
from collections.abc import Callable, Coroutine, Mapping
from typing import Literal, overload

from asyncwifi._clock import Clock, SystemClock
from asyncwifi._protocol import require_positive
from asyncwifi.errors import ClientStateError, ValidationError
from asyncwifi.ratelimit._headers import RateLimitHeaders
from asyncwifi.ratelimit._keepalive import KeepAlive
from asyncwifi.ratelimit._limits import Limits
from asyncwifi.ratelimit._permit import PLAIN, Ask, Lane, Permit, Waiter
from asyncwifi.ratelimit._snapshot import QuotaSnapshot, ThrottleEvent, fmt_time, take_snapshot
from asyncwifi.ratelimit._store import Answer, MemoryStore, RateStore
from asyncwifi.ratelimit._truth import NOW, Reason, ServerTruth
from asyncwifi.ratelimit._volume import ObjectCounts, Volume, month_end

__all__ = ["Scheduler"]

_INF = math.inf
_LAST = 1 << 62  # an arrival number after every real one (a newcomer queues behind ties)
_NO_HOLD: tuple[Reason, KeepAlive | None] = (NOW, None)
#: waits that hold no one else up: an object's daily quota, the month's object allowance
_PARKED = ("object", "month")
_log = logging.getLogger("asyncwifi.ratelimit")


class Scheduler:
    """Admits requests so that no window of any limit ever holds more than its count.

    The policy on a spent quota and the in-flight bound come from ``limits``. ``aging`` is
    the handicap in seconds per lane step (default: the shortest period); paced mode lasts
    ``paced_recovery`` periods after the last unexpected 429. Every :class:`ThrottleEvent`
    is logged and passed to each callback in ``on_throttle``.
    """

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        store: RateStore | None = None,
        clock: Clock | None = None,
        aging: float | None = None,
        paced_recovery: float = 60.0,
    ) -> None:
        require_positive(paced_recovery, "paced_recovery")
        self.limits = limits = limits if limits is not None else Limits()
        self.store = store = store if store is not None else MemoryStore()
        store.bind(specs := limits.windows())
        self._truth = ServerTruth(specs, limits, paced_recovery, store.blank)
        # a store answering as MemoryStore does is asked without a coroutine (the hot path)
        plain = isinstance(store, MemoryStore) and type(store).acquire is MemoryStore.acquire
        self._take = store.take if isinstance(store, MemoryStore) and plain else None
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.on_throttle: list[Callable[..., None]] = []
        self._mif: float = _INF if limits.max_in_flight is None else limits.max_in_flight
        default_aging = specs[0].period if specs else 60.0
        self._aging = default_aging if aging is None else require_positive(aging, "aging")
        self._longest = max(specs, key=lambda s: s.span).name if specs else ""  # for used()
        self._heap: list[Waiter] = []
        self._parked: list[Waiter] = []  # waiting for an object's quota: they hold no one up
        self._arrivals, self._last_arrival = itertools.count(), -_INF
        self.in_flight = 0  # admitted and not yet released
        self._refunded = 0  # admissions given back: the others are every request sent
        self._closed = self._draining = False
        #: admission number -> its clock time until released, and the store's ticket and the
        #: tag where they are not that time and "other": plain admissions allocate no object
        #: the garbage collector tracks (10,000 in flight would each cost it a visit)
        self._open: dict[int, float] = {}
        self._booked: dict[int, tuple[object, str]] = {}
        #: the store's last refusal (why, for which scroll): not asked again before the time
        self._hold_until, self._hold = -_INF, _NO_HOLD
        self._timer: asyncio.Task[None] | None = None
        self._timer_at = _INF
        self._degraded: str | None = None
        #: the month's object allowance against what the store last said was exchanged
        self._volume = Volume(limits.allowance)

    # -- asking ----------------------------------------------------------------------------

    def slot(
        self,
        lane: Lane = Lane.DEFAULT,
        *,
        tag: str | None = None,
        deadline: float | None = None,
        objects: str | None = None,
        keepalive: KeepAlive | None = None,
    ) -> Permit:
        """Wait for admission (``async with``); the permit's in-flight place ends on exit.

        ``tag`` says what the request is (see :meth:`used`); a ``deadline`` (clock time) puts
        it in the earliest-deadline-first tier; ``objects`` names the object quota it spends;
        ``keepalive`` the open scroll it belongs to. Bad arguments raise ``ValidationError``.
        """
        return Permit(self, self._ask_for(lane, tag, deadline, objects, keepalive))

    def acquire(
        self,
        lane: Lane = Lane.DEFAULT,
        *,
        tag: str | None = None,
        deadline: float | None = None,
        objects: str | None = None,
        keepalive: KeepAlive | None = None,
    ) -> Coroutine[None, None, int]:
        """As :meth:`slot`: the admission's number, for :meth:`release` after (a plain int:
        thousands of callers in flight leave nothing for the garbage collector to walk)."""
        if type(lane) is Lane and tag is None and deadline is None and not (objects or keepalive):
            return self._acquire(PLAIN[lane])  # the hot path: one shared ask, nothing to check
        return self._acquire(self._ask_for(lane, tag, deadline, objects, keepalive))

    @staticmethod
    def _ask_for(
        lane: Lane,
        tag: str | None,
        deadline: float | None,
        objects: str | None,
        keepalive: KeepAlive | None,
    ) -> Ask:
        if type(lane) is Lane and tag is None and deadline is None and not (objects or keepalive):
            return PLAIN[lane]  # one shared ask per lane
        if deadline is not None and not math.isfinite(deadline):
            raise ValidationError(f"deadline must be a finite clock time, got {deadline!r}")
        if tag is not None and (type(tag) is not str or not tag):
            raise ValidationError(f"a tag must be a non-empty string, got {tag!r}")
        objects = objects.lower() if objects else None
        return Lane(lane), tag or "other", deadline, objects, keepalive

    async def _acquire(self, ask: Ask) -> int:
        if self._closed:
            raise ClientStateError("the rate-limit scheduler is closed")
        now = self.clock.now()
        if self._take is None or self._heap or self.in_flight >= self._mif:
            return await self._wait(ask, None, now)  # a store with I/O is asked by the timer
        got = self._gate(ask, now) or self._admitted(ask, now, self._take(now, ask[1], ask[4]))
        return got if isinstance(got, int) else await self._wait(ask, got, now)

    def _gate(self, ask: Ask, now: float) -> tuple[float, Reason] | None:
        """What the server said (or the store last answered) holding ``ask`` back; None:
        only the store can tell."""
        truth = self._truth
        if truth.paced_until:
            self._apply(truth.tick(now), now)
        gated = truth.pause_until > now or truth.seq >= truth.cap_floor or ask[3] is not None
        if (gated or self._volume.spent) and (refused := self._blocked(ask, now))[0] > now:
            return refused
        if now < self._hold_until and self._hold[1] is ask[4]:
            return self._hold_until, self._hold[0]
        return None

    def _blocked(self, ask: Ask, now: float) -> tuple[float, Reason]:
        """When the server's state and the month's object allowance let ``ask`` go, and why
        not sooner (``NOW``: nothing but the store holds it back)."""
        t, why = self._truth.gate(now, ask[3])
        if self._volume.spent and (spent := self._volume.gate(now, ask[1])) is not None:
            end = month_end(now)
            if end > t:
                t, why = end, Reason("month", spent)
        return t, why

    def _admitted(self, ask: Ask, now: float, answer: Answer) -> int | tuple[float, Reason]:
        """Book the store's answer: the admission's number, or when to ask again and why."""
        ticket, at, name = answer
        if ticket is None:
            why = Reason(name) if name in ("", "pause", "keepalive") else Reason("window", name)
            self._hold_until, self._hold = at, (why, ask[4])
            return at, why
        truth = self._truth
        self.in_flight += 1
        truth.seq = seq = truth.seq + 1
        at = now if at < now else at  # the store's clock may be ahead of ours
        self._open[seq] = at
        if ticket != at or ask[1] != "other":
            self._booked[seq] = (ticket, ask[1])
        truth.arrived(seq, at, ask[1])  # the first, or after a quiet span: the server's word first
        return seq

    async def _wait(self, ask: Ask, refused: tuple[float, Reason] | None, now: float) -> int:
        t, why = self._blocked(ask, now) if refused is None else refused
        if err := self._truth.exhausted(now, t, why, self._volume):
            raise err
        now = self._last_arrival = max(now, self._last_arrival)  # a clock stepping back
        seq, deadline = next(self._arrivals), ask[2]
        key = (0, deadline, seq) if deadline is not None else (1, now + ask[0] * self._aging, seq)
        w = Waiter(key, asyncio.get_running_loop().create_future(), ask)
        if why.kind in _PARKED:
            self._parked.append(w)
        else:
            heapq.heappush(self._heap, w)
        if why.kind in _PARKED or self._heap[0] is w:
            self._arm(t)
        try:
            return await w.fut
        except asyncio.CancelledError:
            if w.fut.done() and not w.fut.cancelled() and w.fut.exception() is None:
                self.refund(w.fut.result())  # granted, then cancelled before it resumed
            w.fut.cancel()
            self._arm(self.clock.now())
            raise

    def sent_at(self, seq: int) -> float:
        """The clock time admission ``seq`` (still in flight) was admitted at."""
        return self._open[seq]

    def release(self, seq: int) -> None:
        """End admission ``seq``'s request (frees its in-flight place); again: no effect."""
        if self._open.pop(seq, None) is not None:
            if self._booked:
                self._booked.pop(seq, None)
            self.in_flight -= 1
            if seq == self._truth.probe:  # a cold start's probe: its answer is in, or none
                self._truth.probed()
                self._arm(self.clock.now())
            elif self._heap and self.in_flight + 1 >= self._mif:
                self._arm(self.clock.now())

    def refund(self, seq: int) -> None:
        """Give admission ``seq`` back and end it: only when the request never left."""
        if seq in self._open:
            ticket, tag = self._booked.get(seq) or (self._open[seq], "other")
            self._refunded += 1
            self.store.refund(ticket, tag)
            self._hold_until = -_INF
            self.release(seq)
            self._arm(self.clock.now())

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
        if at > self.clock.now():
            await self.clock.sleep(at - self.clock.now())  # _arm may cancel it here
        self._draining, wake = True, _INF  # from here on, _arm leaves it be
        try:
            wake = await self._drain()
        except Exception as exc:
            _log.exception("rate-limit store failed; failing the waiting requests")
            self._fail(exc)
        finally:
            self._draining, self._timer, self._timer_at = False, None, _INF
        if wake < _INF:
            self._arm(wake)

    async def _drain(self) -> float:
        """Grant every waiter that can go now; returns the next time to look (inf: none)."""
        heap, truth = self._heap, self._truth
        while not self._closed:
            now, wake, parked, self._parked = self.clock.now(), _INF, self._parked, []
            for w in parked:  # waiters whose object quota is back rejoin the queue
                t, why = self._blocked(w.ask, now)
                if why.kind in _PARKED and t > now and not w.fut.done():
                    self._parked.append(w)
                    wake = min(wake, t)
                elif not w.fut.done():
                    heapq.heappush(heap, w)
            while heap and heap[0].fut.done():
                heapq.heappop(heap)
            if not heap or self.in_flight >= self._mif:
                return wake  # a release re-arms the timer
            w = heap[0]
            got = self._gate(w.ask, now) or self._admitted(
                w.ask, now, await self._ask_store(w.ask, now)
            )
            err = None
            if isinstance(got, int) and w.fut.done():  # cancelled while the store decided
                self.refund(got)
                continue
            if isinstance(got, tuple):
                if got[0] <= now:
                    return now  # the store asks to decide again: on the next turn of the loop
                err = truth.exhausted(now, *got, self._volume)
                if err is None and got[1].kind not in _PARKED:
                    return min(got[0], wake)
            if heap[0] is w:
                heapq.heappop(heap)
            else:  # a newcomer went ahead while the store decided
                heap.remove(w)
                heapq.heapify(heap)
            if isinstance(got, int):
                w.fut.set_result(got)
            elif err is not None:
                w.fut.set_exception(err)
            else:
                self._parked.append(w)
        return _INF

    async def _ask_store(self, ask: Ask, now: float) -> Answer:
        if self._take is not None:
            return self._take(now, ask[1], ask[4])
        answer = await self.store.acquire(now, ask[1], ask[4])
        if self.store.degraded is not self._degraded:  # went to its fallback, or came back
            was, self._degraded = self._degraded, self.store.degraded
            why = f"rate-limit store back: the shared store is reachable again (was: {was})"
            if self._degraded is not None:
                why = "rate-limit store unavailable, using a conservative local limit: "
                why += self._degraded
            self._apply([ThrottleEvent("restored" if was else "fallback", now, reason=why)], now)
        return answer

    def _fail(self, exc: Exception) -> None:
        """Every waiter gets ``exc`` (a closed scheduler, a failing store): none hangs."""
        for w in [*self._heap, *self._parked]:
            if not w.fut.done():
                w.fut.set_exception(exc)
        self._heap[:] = self._parked[:] = []

    # -- what the server said --------------------------------------------------------------

    def observe(
        self,
        status: int,
        headers: Mapping[str, str] | RateLimitHeaders | None,
        *,
        sent_at: float | None = None,
        seq: int | None = None,
    ) -> None:
        """Apply a response's status and headers (of admission ``seq``, sent at ``sent_at``)."""
        if not isinstance(headers, RateLimitHeaders):
            headers = RateLimitHeaders.from_headers(headers)
        if status != 429 and headers.empty:
            return
        now = self.clock.now()
        sent = sent_at if sent_at is not None else self._open.get(seq or 0, now)
        self._apply(self._truth.observe(now, status, headers, sent_at=sent, seq=seq), now)
        self._arm(now)

    def _apply(self, events: list[ThrottleEvent], now: float) -> None:
        """Carry out what the server's state asks for, log it, and tell ``on_throttle``."""
        for e in events:
            if e.kind == "pause" and e.until is not None:
                self.store.pause(e.until, now)
            elif e.kind in ("paced", "exact", "limit"):
                paced = None if e.kind == "limit" else e.kind == "paced"
                self.store.configure(e.name, count=e.count, paced=paced)
                self._hold_until = -_INF
            level = logging.INFO if e.kind in ("exact", "restored") else logging.WARNING
            _log.log(
                level, "%s%s", e.reason, "" if e.until is None else f" (until {fmt_time(e.until)})"
            )
            for callback in self.on_throttle:
                try:
                    callback(e)
                except Exception:
                    _log.exception("on_throttle callback failed")

    # -- scrolls, projections, counts ------------------------------------------------------

    def keepalive(self, horizon: float) -> KeepAlive:
        """A handle for one scroll: each request made with it keeps a place in the short
        windows for the scroll's next request, due ``horizon`` clock seconds later, until
        :meth:`drop_keepalive` (see ``_keepalive``; shared through the store)."""
        return KeepAlive(uuid.uuid4().hex[:16], require_positive(horizon, "a keep-alive horizon"))

    def drop_keepalive(self, keepalive: KeepAlive) -> None:
        """The scroll ended: its place goes back to everyone else."""
        self.store.drop_keepalive(keepalive.token)
        self._hold_until = -_INF
        self._arm(self.clock.now())

    def earliest_admission(
        self,
        lane: Lane = Lane.DEFAULT,
        *,
        deadline: float | None = None,
        objects: str | None = None,
    ) -> float:
        """Clock time at which a request entering now (in ``lane``, or with ``deadline``) could
        be admitted, were the waiters ahead each to go as early as the limits allow: an
        estimate (it cannot foresee responses, 429s or later arrivals)."""
        t = (now := self.clock.now()) + int(lane) * self._aging
        key = (1, t, _LAST) if deadline is None else (0, deadline, _LAST)
        ahead = sum(1 for w in self._heap if w.key < key and not w.fut.done())
        # the store's last refusal holds for anyone unless it was one scroll's own
        hint = self._hold_until if self._hold[1] is None else -_INF
        t0 = self._truth.gate(now, objects)[0]
        times = [max(t, hint) for t in self.store.log.project(max(now, t0), ahead + 1)]
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
        """Admissions per tag (or ``tag``'s) that ``window`` (default: the longest) counts
        now, every process's when the store is shared (this process's while ``RedisStore``
        is unreachable): what a budget giving each kind of request a share reads."""
        name = window or self._longest
        if name not in self._truth.specs:
            raise ValidationError(f"no such window {name!r}; there are {list(self._truth.specs)}")
        counts = await self.store.tally(self.clock.now(), name)
        return counts if tag is None else counts.get(tag, 0)

    async def count_objects(self, kind: str, count: int) -> ObjectCounts:
        """Count ``count`` objects of ``kind`` exchanged now (every record a response returned,
        created, edited or deleted: spec §8), in the store beside the requests; the UTC day's
        and month's counts after it (every process's with a shared store)."""
        if type(count) is not int or count < 0:  # one test on the path of every response
            require_positive(count, "an object count", integer=True, zero=True)
        if type(kind) is not str or not kind:
            raise ValidationError(f"an object kind must be a non-empty string, got {kind!r}")
        counts = await self.store.add_objects(self.clock.now(), kind, count)
        was = self._volume.spent
        self._volume.note(counts)
        if self._volume.spent and not was:
            self._arm(self.clock.now())
        return counts

    @overload
    async def objects(self, kind: str, *, period: Literal["day", "month"] = "month") -> int: ...
    @overload
    async def objects(
        self, kind: None = None, *, period: Literal["day", "month"] = "month"
    ) -> dict[str, int]: ...
    async def objects(
        self, kind: str | None = None, *, period: Literal["day", "month"] = "month"
    ) -> int | dict[str, int]:
        """Objects exchanged per kind (or ``kind``'s; ``"all"``: every kind) this UTC month
        (or ``period="day"``), every process's when the store is shared: beside
        :meth:`used`, what an object budget reads."""
        if period not in ("day", "month"):
            raise ValidationError(f"period must be 'day' or 'month', got {period!r}")
        counts = await self.store.object_counts(self.clock.now())
        self._volume.note(counts)
        if kind is not None:
            return counts.used(kind, period=period)
        return dict(counts.this_month if period == "month" else counts.today)

    @property
    def quota(self) -> QuotaSnapshot:
        """A snapshot of what is known: limits, remaining per window, resets, and sources."""
        admitted = self._truth.seq - self._refunded
        return take_snapshot(
            self.clock.now(), self.limits, self._truth, self.store, admitted, self._volume
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
            await self.store.detach()  # the last scheduler using a store closes it

    async def __aenter__(self) -> Scheduler:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        waiting = len(self._heap) + len(self._parked)
        return f"<Scheduler {self.store.status} in_flight={self.in_flight} waiting={waiting}>"
