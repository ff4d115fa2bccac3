"""The month's object allowance as a gate, not a tripwire (spec §8, DESIGN "The object floor").

A request for objects *reserves* them before it is sent (:meth:`ObjectGate.reserve`): the
store holds up to the page's ``size`` against what the allowance leaves, less what the other
requests in flight hold (every process's with ``RedisStore``: atomically, on Redis' clock),
and the page is asked for at the size held, never more. The response *settles* the hold
with the records it carried (a page holds at most its size); a request that fails releases
it; a hold of a process that died lapses after the store's TTL.

When nothing is left (or less than ``least``, a scroll continuation's whole page: its size
cannot change, spec §4.5) the request waits for the 1st at 00:00 UTC or raises
``QuotaExhaustedError`` as ``Limits.on_exhausted`` says (:meth:`ServerTruth.exhausted`, the
one rule); when what is left is only held by other requests in flight, it waits for their
answers (a short page gives back what it did not use). A kind no allowance names, and a
client with no allowance, reserve nothing: the request goes at the size it asked for.
"""

from __future__ import annotations

import asyncio
from typing import Literal, overload

from asyncwifi._clock import Clock
from asyncwifi._protocol import require_positive
from asyncwifi.errors import ValidationError
from asyncwifi.ratelimit._store import RateStore
from asyncwifi.ratelimit._truth import Reason, ServerTruth, Wait
from asyncwifi.ratelimit._volume import ObjectCounts, Volume, month_end

__all__ = ["ObjectGate", "Reservation"]

#: clock seconds between two looks at holds of other requests (another scheduler's, another
#: process's) that keep what is left: their answers give back what a short page did not use
HELD_POLL = 1.0


class Reservation:
    """Objects of ``kind`` held for one request: ask the server for at most ``size``. Held
    in the store while ``ticket`` is set (None: nothing held, no allowance binds)."""

    __slots__ = ("kind", "size", "ticket")

    def __init__(self, kind: str, size: int, ticket: object = None) -> None:
        self.kind = kind
        self.size = size
        self.ticket = ticket

    def __repr__(self) -> str:
        held = "held" if self.ticket is not None else "free"
        return f"<Reservation {self.size} {self.kind} {held}>"


class ObjectGate:
    """Counts the objects a client exchanges and reserves them against the month's
    allowance (``Limits.month``) before a request is sent (see the module doc)."""

    __slots__ = ("_changed", "_truth", "active", "clock", "store", "volume")

    def __init__(self, store: RateStore, clock: Clock, truth: ServerTruth) -> None:
        self.store = store
        self.clock = clock
        self._truth = truth  # the policy on a spent quota (wait, at most max_wait, or raise)
        #: the allowance against what the store last said was exchanged
        self.volume = Volume(truth.limits.allowance)
        #: whether an allowance is known: without one, nothing is reserved (the hot path)
        self.active = bool(self.volume.allowance)
        self._changed: asyncio.Event | None = None  # a hold of this gate ended

    def binds(self, kind: str) -> bool:
        """Whether requests for objects of ``kind`` reserve them (an allowance names it)."""
        return self.active and self.volume.binds(kind)

    async def reserve(self, kind: str, want: int, *, least: int = 1) -> Reservation:
        """Hold up to ``want`` objects of ``kind`` (at least ``least``) for one request;
        waits, or raises ``QuotaExhaustedError``, while fewer than ``least`` are left. The
        caller asks the server for ``size`` and settles or releases the reservation."""
        if type(want) is not int or want < 1 or type(least) is not int or not 1 <= least <= want:
            raise ValidationError(f"a reservation needs 1 <= least <= want: {least!r}, {want!r}")
        if not self.binds(kind):
            return Reservation(kind, want)
        while True:
            now = self.clock.now()
            got = await self.store.reserve(now, kind, want, least, self.volume.allowance)
            if got.size:
                return Reservation(kind, got.size, got.ticket)
            if got.free >= least:  # what is left is held by requests in flight
                await self._held()
                continue
            self.volume.note(await self.store.object_counts(now))
            what = self.volume.describe(got.name)
            if got.free:
                what += (
                    f", of which {got.free:,} left: fewer than the {least:,} a scroll's next "
                    "page needs (its size cannot change)"
                )
            end = month_end(now)
            if err := self._truth.exhausted(now, Wait(end, Reason("month", got.name)), what):
                raise err
            await self.clock.sleep(end - now)

    async def _held(self) -> None:
        """Until a hold of this gate ends, or ``HELD_POLL`` (another's may have)."""
        changed = self._changed = self._changed or asyncio.Event()
        waiter = asyncio.ensure_future(changed.wait())
        timer = asyncio.ensure_future(self.clock.sleep(HELD_POLL))
        try:
            await asyncio.wait((waiter, timer), return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            timer.cancel()

    def _ended(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def settle(self, hold: Reservation | None, kind: str, count: int) -> ObjectCounts:
        """Count ``count`` objects of ``kind`` exchanged now (spec §8: every record a response
        returned, created, edited or deleted), ending ``hold`` (the request's reservation,
        if any) in the same step; the UTC day's and month's counts after it."""
        if type(count) is not int or count < 0:  # one test on the path of every response
            require_positive(count, "an object count", integer=True, zero=True)
        if type(kind) is not str or not kind:
            raise ValidationError(f"an object kind must be a non-empty string, got {kind!r}")
        ticket = None if hold is None else hold.ticket
        if hold is not None:
            hold.ticket = None  # settled: a release after it changes nothing
        counts = await self.store.add_objects(self.clock.now(), kind, count, ticket)
        self.volume.note(counts)
        if ticket is not None:
            self._ended()
        return counts

    def release(self, hold: Reservation | None) -> None:
        """Give a reservation back unused (its request failed, or was never sent)."""
        if hold is not None and hold.ticket is not None:
            ticket, hold.ticket = hold.ticket, None
            self.store.release_objects(ticket)
            self._ended()

    async def count(self, kind: str, count: int) -> ObjectCounts:
        """Count ``count`` objects of ``kind`` exchanged now, with no reservation (a
        receiver's delivery, a caller's own request): :meth:`settle`."""
        return await self.settle(None, kind, count)

    async def counts(self) -> ObjectCounts:
        """Objects exchanged per kind this UTC day and month (every process's with a
        shared store)."""
        counts = await self.store.object_counts(self.clock.now())
        self.volume.note(counts)
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
        (or ``period="day"``), every process's when the store is shared: beside the
        scheduler's ``used()``, what an object budget reads."""
        if period not in ("day", "month"):
            raise ValidationError(f"period must be 'day' or 'month', got {period!r}")
        counts = await self.counts()
        if kind is not None:
            return counts.used(kind, period=period)
        return dict(counts.this_month if period == "month" else counts.today)

    def __repr__(self) -> str:
        return f"<ObjectGate allowance={self.volume.allowance!r}>"
