"""The asyncio scheduler: every request waits here for a slot (DESIGN "Rate limits").

The public face of the admission loop (``_admission``): configuration, ``slot()`` /
``acquire()``, responses fed back (``observe``), projections for deadlines, the quota
snapshot, and the effects of what the server said (pauses, paced mode, lowered limits),
each logged once and passed to ``on_throttle``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import uuid
from collections.abc import Callable
from types import TracebackType
from typing import Literal

from asyncwifi._clock import Clock, SystemClock
from asyncwifi.errors import ClientStateError, ValidationError
from asyncwifi.ratelimit._admission import AdmissionLoop, fmt_time
from asyncwifi.ratelimit._headers import RateLimitHeaders
from asyncwifi.ratelimit._keepalive import KeepAlive
from asyncwifi.ratelimit._limits import Limits
from asyncwifi.ratelimit._permit import HeadersLike, Lane, Permit, Slot
from asyncwifi.ratelimit._snapshot import QuotaSnapshot, ThrottleEvent, take_snapshot
from asyncwifi.ratelimit._store import MemoryStore, Store
from asyncwifi.ratelimit._truth import Effect, ServerTruth

__all__ = ["Lane", "Permit", "Scheduler"]

_LAST = 1 << 62  # an arrival number after every real one (a newcomer queues behind ties)


class Scheduler(AdmissionLoop):
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
        self._truth = ServerTruth(specs, paced_recovery=paced_recovery)
        self._store = store if store is not None else MemoryStore()
        self._store.bind(specs)
        self._store.listen(self._store_event)
        self._clock = clock if clock is not None else SystemClock()
        self._log = logger if logger is not None else logging.getLogger("asyncwifi.ratelimit")
        self._on_throttle = on_throttle
        self._init_queue(
            on_exhausted=on_exhausted,
            max_quota_wait=max_quota_wait,
            max_in_flight=max_in_flight,
            aging=aging if aging is not None else (specs[0].period if specs else 60.0),
            pacing_horizon=max(
                (s.span for s in specs if s.period < self._truth.day_period), default=0.0
            ),
        )

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
        keepalive: KeepAlive | None = None,
    ) -> Slot:
        """Wait for admission (``async with``); the permit's in-flight place ends on exit.

        ``deadline`` (clock time) puts the request in the earliest-deadline-first tier;
        ``objects`` names the object quota the request spends (``"hotspots"``);
        ``keepalive`` names the open scroll the request belongs to (see :meth:`keepalive`).
        """
        if type(lane) is not Lane:
            lane = Lane(lane)
        if deadline is not None and not math.isfinite(deadline):
            raise ValidationError(f"deadline must be a finite clock time, got {deadline!r}")
        return Slot(self, lane, deadline, objects.lower() if objects else None, keepalive)

    def keepalive(self, horizon: float) -> KeepAlive:
        """A handle for one scroll: each request made with it keeps a place in the short
        windows for the scroll's next request, due ``horizon`` clock seconds later, until
        :meth:`drop_keepalive` (see ``_keepalive``; shared through the store)."""
        if not horizon > 0 or not math.isfinite(horizon):
            raise ValidationError(f"a keep-alive horizon must be > 0 seconds, got {horizon!r}")
        return KeepAlive(uuid.uuid4().hex[:16], horizon)

    def drop_keepalive(self, keepalive: KeepAlive) -> None:
        """The scroll ended: its place goes back to everyone else."""
        self._store.drop_keepalive(keepalive.token)
        if (self._heap or self._parked) and not self._closed:
            self._kick()

    async def acquire(
        self,
        lane: Lane = Lane.DEFAULT,
        *,
        deadline: float | None = None,
        objects: str | None = None,
        keepalive: KeepAlive | None = None,
    ) -> Permit:
        """Wait for admission without a context manager; call ``permit.release()`` after."""
        if type(lane) is not Lane:
            lane = Lane(lane)
        if deadline is not None and not math.isfinite(deadline):
            raise ValidationError(f"deadline must be a finite clock time, got {deadline!r}")
        if objects:
            objects = objects.lower()
        p = self._try_now(lane, deadline, objects, keepalive)
        return p if p is not None else await self._wait(lane, deadline, objects, keepalive)

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
        effects = self._truth.observe(
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
        return take_snapshot(
            self._clock.now(),
            self.limits,
            self._truth,
            self._store,
            in_flight=self._in_flight,
            waiting=sum(1 for w in (*self._heap, *self._parked) if not w.fut.done()),
            admitted=self._admitted,
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

    # -- projections -----------------------------------------------------------------------

    def _project(self, now: float, ahead: int, objects: str | None) -> float:
        t0, _ = self._truth.gate(now, objects)
        times = self._store.project(max(now, t0), ahead + 1)
        for allowed, end in self._truth.caps(now):
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
                    fmt_time(e.until),
                )
            elif e.kind == "paced":
                self._store.configure(e.name, paced=True)
                self._log.warning("%s (until %s)", e.reason, fmt_time(e.until or now))
            elif e.kind == "exact":
                self._store.configure(e.name, paced=False)
                self._log.info("back to exact mode on the %s limit: %s", e.name, e.reason)
            elif e.kind == "limit" and e.count is not None:
                self._store.configure(e.name, count=e.count)
                self._log.warning("lowering the %s limit: %s", e.name, e.reason)
            elif e.kind in ("exhausted", "object"):
                self._log.warning("%s (until %s)", e.reason, fmt_time(e.until or now))
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
