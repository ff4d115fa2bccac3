"""The asyncio scheduler: every request waits here for its admission (DESIGN "Rate limits").

One admission path (``_gate``: what the server said, then the store, then ``_book``),
one queue (``_queue``: deadlines first, then arrival plus the lane's handicap), one timer.
A caller that may go at once never queues (a store with I/O is asked by the timer alone);
the timer grants the head of the queue whenever it may go; a release, a response or a
refund re-arms it. ``async with scheduler.slot()`` holds a :class:`Permit`.

Objects are a quota too (spec §8): :attr:`Scheduler.object_gate` (``_reserve``) counts the
records each response carried in the store beside the requests, and reserves them against
the month's allowance (``Limits.month``) before a request for them is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable, Coroutine, Mapping
from typing import overload

from asyncwifi._clock import Clock, SystemClock
from asyncwifi._instant import fmt_time
from asyncwifi._protocol import require_positive
from asyncwifi.errors import ClientStateError, ValidationError
from asyncwifi.ratelimit._headers import RateLimitHeaders
from asyncwifi.ratelimit._keepalive import KeepAlive
from asyncwifi.ratelimit._limits import Limits
from asyncwifi.ratelimit._permit import Permit
from asyncwifi.ratelimit._queue import PLAIN, Ask, Lane, Queue
from asyncwifi.ratelimit._reserve import ObjectGate
from asyncwifi.ratelimit._snapshot import QuotaSnapshot, take_snapshot
from asyncwifi.ratelimit._store import Answer, MemoryStore, RateStore
from asyncwifi.ratelimit._truth import NOW, PARKED, Reason, ServerTruth, ThrottleEvent, Wait

__all__ = ["Scheduler"]

_INF = math.inf
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
        self._memory = store if MemoryStore.answers_as_itself(store) else None
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.on_throttle: list[Callable[..., None]] = []
        self._mif: float = _INF if limits.max_in_flight is None else limits.max_in_flight
        default_aging = specs[0].period if specs else 60.0
        self._longest = max(specs, key=lambda s: s.span).name if specs else ""  # for used()
        self._queue = Queue(default_aging if aging is None else require_positive(aging, "aging"))
        self.in_flight = 0  # admitted and not yet released
        self._refunded = 0  # admissions given back: the others are every request sent
        #: waiters granted by the timer whose tasks have not resumed yet: a newcomer admitted
        #: at once lets them go first (else it would send before them, at the same instant)
        self._granted = 0
        self._closed = self._draining = False
        #: admission number -> its clock time until released, and its tag and the store's
        #: ticket where they are not "other" and that time: plain admissions allocate no object
        #: the garbage collector tracks (10,000 in flight would each cost it a visit)
        self._open: dict[int, float] = {}
        self._tags: dict[int, str] = {}
        self._tickets: dict[int, object] = {}
        #: the store's last refusal (why, for which scroll): not asked again before the time
        self._hold_until, self._hold_why = -_INF, NOW
        self._hold_for: KeepAlive | None = None
        self._timer: asyncio.Task[None] | None = None
        self._timer_at = _INF
        self._degraded: str | None = None
        #: the objects exchanged and the month's allowance (``_reserve``): beside :meth:`used`,
        #: ``objects(kind=None, period="month")`` (every process's), and ``count_objects``
        self.object_gate = gate = ObjectGate(store, self.clock, self._truth)
        self.objects, self.count_objects = gate.objects, gate.count

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
        return Permit(self, Ask.of(lane, tag, deadline, objects, keepalive))

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
            return self.admit(PLAIN[lane])  # the hot path: one shared ask, nothing to check
        return self.admit(Ask.of(lane, tag, deadline, objects, keepalive))

    async def admit(self, ask: Ask) -> int:
        """Wait for the admission of ``ask``; its number, for :meth:`release` after."""
        if self._closed:
            raise ClientStateError("the rate-limit scheduler is closed")
        now, memory = self.clock.now(), self._memory
        if memory is None or self._queue.heap or self.in_flight >= self._mif:
            return await self._wait(ask, None, now)  # a store with I/O is asked by the timer
        got = self._gate(ask, now) or self._take(memory, ask, now)
        if not isinstance(got, int):
            return await self._wait(ask, got, now)
        if self._granted:  # FIFO in what is sent too: those granted before resume first
            try:
                await asyncio.sleep(0)
            except asyncio.CancelledError:
                self.refund(got)  # admitted, never sent
                raise
        return got

    def _gate(self, ask: Ask, now: float) -> Wait | None:
        """What the server said (or the store last answered) holding ``ask`` back; None:
        only the store can tell."""
        truth = self._truth
        if truth.paced_until:
            self._apply(truth.tick(now), now)
        gated = truth.pause_until > now or truth.seq >= truth.cap_floor or ask.objects is not None
        if gated and (refused := truth.gate(now, ask.objects)) and refused.until > now:
            return refused
        if now < self._hold_until and self._hold_for is ask.keepalive:
            return Wait(self._hold_until, self._hold_why)
        return None

    def _take(self, memory: MemoryStore, ask: Ask, now: float) -> int | Wait:
        """Ask the in-process store (no I/O, no answer to allocate on an admission) and
        book what it says."""
        if (refused := memory.refusal(now, ask.keepalive)) is None:
            return self._book(ask, now, memory.note(now, ask.tag, ask.keepalive), now)
        return self._refused(ask, refused)

    def _refused(self, ask: Ask, answer: Answer) -> Wait:
        """The store's refusal of ``ask``: when to ask again and why (held till then)."""
        at, name = answer.at, answer.why
        why = Reason(name) if name in ("", "pause", "keepalive") else Reason("window", name)
        self._hold_until, self._hold_why, self._hold_for = at, why, ask.keepalive
        return Wait(at, why)

    def _book(self, ask: Ask, now: float, ticket: object, at: float) -> int:
        """Book the store's admission of ``ask`` at ``at`` (``ticket``): its number."""
        truth = self._truth
        self.in_flight += 1
        truth.seq = seq = truth.seq + 1
        at = now if at < now else at  # the store's clock may be ahead of ours
        self._open[seq] = at
        if ask.tag != "other":
            self._tags[seq] = ask.tag
        if ticket != at:
            self._tickets[seq] = ticket
        truth.arrived(seq, at, ask.tag)  # the first, or after a quiet span: the server's word first
        return seq

    async def _wait(self, ask: Ask, refused: Wait | None, now: float) -> int:
        wait = self._truth.gate(now, ask.objects) if refused is None else refused
        if wait is not None and (err := self._truth.exhausted(now, wait)):
            raise err
        w = self._queue.join(ask, now, wait)
        if (wait is not None and wait.why.kind in PARKED) or self._queue.heap[0] is w:
            self._arm(now if wait is None else wait.until)
        try:
            got = await w.fut
        except asyncio.CancelledError:
            if w.fut.done() and not w.fut.cancelled() and w.fut.exception() is None:
                self._granted -= 1
                self.refund(w.fut.result())  # granted, then cancelled before it resumed
            w.fut.cancel()
            self._arm(self.clock.now())
            raise
        self._granted -= 1
        return got

    def sent_at(self, seq: int) -> float:
        """The clock time admission ``seq`` (still in flight) was admitted at."""
        return self._open[seq]

    def release(self, seq: int) -> None:
        """End admission ``seq``'s request (frees its in-flight place); again: no effect."""
        if self._open.pop(seq, None) is not None:
            if self._tags:
                self._tags.pop(seq, None)
            if self._tickets:
                self._tickets.pop(seq, None)
            self.in_flight -= 1
            if seq == self._truth.probe:  # a cold start's probe: its answer is in, or none
                self._truth.probed()
                self._arm(self.clock.now())
            elif self._queue.heap and self.in_flight + 1 >= self._mif:
                self._arm(self.clock.now())

    def refund(self, seq: int) -> None:
        """Give admission ``seq`` back and end it: only when the request never left."""
        if seq in self._open:
            self._refunded += 1
            self.store.refund(self._tickets.get(seq, self._open[seq]), self._tags.get(seq, "other"))
            self._hold_until = -_INF
            self.release(seq)
            self._arm(self.clock.now())

    # -- the timer -------------------------------------------------------------------------

    def _arm(self, at: float) -> None:
        """Keep one timer, at the earliest time the queue needs looking at."""
        if self._closed or self._draining or not self._queue:
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
            self._queue.fail(exc)
        finally:
            self._draining, self._timer, self._timer_at = False, None, _INF
        if wake < _INF:
            self._arm(wake)

    async def _drain(self) -> float:
        """Grant every waiter that can go now; returns the next time to look (inf: none)."""
        queue, truth = self._queue, self._truth
        while not self._closed:
            now = self.clock.now()
            # those parked whose object quota is back rejoin the line
            wake = queue.unpark(now, truth.gate) if queue.parked else _INF
            w = queue.head()
            if w is None or self.in_flight >= self._mif:
                return wake  # a release re-arms the timer
            got = self._gate(w.ask, now) or await self._ask_store(w.ask, now)
            err = None
            if isinstance(got, int) and w.fut.done():  # cancelled while the store decided
                self.refund(got)
                continue
            if isinstance(got, Wait):
                if got.until <= now:
                    return now  # the store asks to decide again: on the next turn of the loop
                err = truth.exhausted(now, got)
                if err is None and got.why.kind not in PARKED:
                    return min(got.until, wake)
            queue.leave(w, err is None and isinstance(got, Wait))  # this one parked
            if isinstance(got, int):
                w.fut.set_result(got)
                self._granted += 1
            elif err is not None:
                w.fut.set_exception(err)
        return _INF

    async def _ask_store(self, ask: Ask, now: float) -> int | Wait:
        """The store's answer for ``ask``, booked: its admission's number, or its wait."""
        if self._memory is not None:
            return self._take(self._memory, ask, now)
        answer = await self.store.acquire(now, ask.tag, ask.keepalive)
        self._notice_fallback(now)
        if answer.ticket is None:
            return self._refused(ask, answer)
        return self._book(ask, now, answer.ticket, answer.at)

    def _notice_fallback(self, now: float) -> None:
        """Tell whether the store went to its fallback, or came back, since it last answered."""
        if (was := self._degraded) is not (why := self.store.degraded):
            self._degraded = why
            if why is None:
                why = f"rate-limit store back: the shared store is reachable again (was: {was})"
                self._apply([ThrottleEvent("restored", now, reason=why)], now)
            else:
                why = f"rate-limit store unavailable, using a conservative local limit: {why}"
                self._apply([ThrottleEvent("fallback", now, reason=why)], now)

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
            if self.store.follow(e, now):
                self._hold_until = -_INF  # a window changed: the store's refusal may not hold
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
        return KeepAlive.open(horizon)

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
        ahead = self._queue.ahead(lane, deadline, now := self.clock.now())
        # the store's last refusal holds for anyone unless it was one scroll's own
        hint = self._hold_until if self._hold_for is None else -_INF
        start = now if (wait := self._truth.gate(now, objects)) is None else max(now, wait.until)
        times = [max(t, hint) for t in self.store.log.project(start, ahead + 1)]
        for cap in self._truth.caps(now).values():
            for j in range(max(0, cap.left), len(times)):
                times[j] = max(times[j], cap.end)
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

    @property
    def quota(self) -> QuotaSnapshot:
        """A snapshot of what is known: limits, remaining per window, resets, and sources."""
        admitted, volume = self._truth.seq - self._refunded, self.object_gate.volume
        now = self.clock.now()
        return take_snapshot(now, self.limits, self._truth, self.store, admitted, volume)

    async def aclose(self) -> None:
        """Stop: every waiter gets ClientStateError (nothing was sent); the timer ends."""
        if not self._closed:
            self._closed = True
            self._queue.fail(
                ClientStateError("the rate-limit scheduler was closed; nothing was sent")
            )
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
        waiting = len(self._queue)
        return f"<Scheduler {self.store.status} in_flight={self.in_flight} waiting={waiting}>"
