"""Discrete-event time for tests: a whole simulated day runs in a second of real time.

``VirtualClock`` (a test helper, not shipped: only this suite uses it) is a
:class:`~asyncwifi._clock.Clock` whose ``sleep()`` registers a timer
instead of waiting. Its event loop (``clock.run(main())``, or ``clock.new_event_loop()``)
watches for the moment when no callback is ready to run, which is when every task is
blocked; only then does the clock jump to its earliest timer and wake exactly the sleepers
due at that instant (in the order they went to sleep). Time never passes while something
can still run, so the outcome depends only on the program, never on the machine's speed,
and ``now()`` at a wake-up equals the requested time exactly.

Rules: code under a virtual clock must wait through the clock (``clock.sleep``), futures
or events. Real timers (``asyncio.sleep``, ``wait_for`` timeouts) still run in real time
and count as "blocked", so virtual time may jump past them; real sockets work but virtual
time does not wait for them. Use :class:`~asyncwifi._clock.ScaledClock` for real I/O.
``VirtualClock(loop_time=True)`` makes the loop's own timers virtual too (its ``time()`` is
the clock's): for code that waits with ``asyncio.timeout(clock.real(...))``, such as a
stream's keep-alive; a test's own real-time safety timeout would then fire in virtual time.

``VirtualClock.stepping(start)`` is the same clock moved by hand, on any event loop (a test
that talks to a real server, a fake of one): time moves only when told (:meth:`set`,
:meth:`step`) or when someone sleeps, by that sleep at once (each listed in ``sleeps``);
a clock second lasts at most ``real`` real seconds (0 by default: a real timeout taken from
it fires at once). It is the suite's one clock for tests that step time themselves.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import selectors
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import FileDescriptorLike

__all__ = ["VirtualClock", "VirtualEventLoop"]

T = TypeVar("T")

#: 2023-11-14 22:13:20 UTC, a fixed default so that runs are reproducible
DEFAULT_START = 1_700_000_000.0


class VirtualClock:
    """A clock whose time advances only when every task waits (see the module docstring)."""

    __slots__ = ("_now", "_real", "_seq", "_timers", "loop_time", "sleeps", "stepped", "wakeups")

    def __init__(self, start: float = DEFAULT_START, *, loop_time: bool = False) -> None:
        self._now = float(start)
        #: the event loop's timers run on this clock too (see the module docstring)
        self.loop_time = loop_time
        self._timers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        #: how many times the clock has jumped forward (a cost measure for tests)
        self.wakeups = 0
        #: moved by hand (:meth:`stepping`), and then each sleep asked of it, in order
        self.stepped = False
        self.sleeps: list[float] = []
        self._real = math.inf  # the most real seconds a clock interval lasts

    @classmethod
    def stepping(cls, start: float = DEFAULT_START, *, real: float = 0.0) -> VirtualClock:
        """A clock moved by hand, on any event loop (see the module docstring)."""
        clock = cls(start)
        clock.stepped, clock._real = True, real
        return clock

    def now(self) -> float:
        return self._now

    def set(self, t: float) -> None:
        """Move a stepping clock to ``t`` (back, too: a test may replay a moment)."""
        if not self.stepped:
            raise RuntimeError("only a stepping clock is set by hand; this one runs its loop")
        self._now = float(t)

    def step(self, seconds: float) -> None:
        """Move a stepping clock ``seconds`` on."""
        self.set(self._now + seconds)

    async def sleep(self, seconds: float) -> None:
        if self.stepped:  # time moves by the sleep, at once; others run meanwhile
            self.sleeps.append(seconds)
            self._now += max(0.0, seconds)
            await asyncio.sleep(0)
            return
        loop = asyncio.get_running_loop()
        if not isinstance(loop, VirtualEventLoop) or loop.clock is not self:
            raise RuntimeError(
                "VirtualClock.sleep() needs the clock's own event loop: use clock.run(main())"
            )
        if not seconds > 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = loop.create_future()
        heapq.heappush(self._timers, (self._now + seconds, next(self._seq), fut))
        try:
            await fut
        finally:
            if not fut.done():
                fut.cancel()  # the entry stays in the heap and is skipped when due

    def real(self, seconds: float) -> float:
        """Virtual seconds are the loop's seconds (timeouts should go through ``sleep``); a
        stepping clock's last at most its ``real``."""
        return min(max(0.0, seconds), self._real)

    def pending(self) -> int:
        """Sleepers still waiting."""
        return sum(1 for _, _, f in self._timers if not f.done())

    def advance(self, until: float | None = None) -> bool:
        """Jump to the earliest live timer (or to ``until``, the loop's next timer, when
        sooner) and wake everyone due then; False if there is nothing to jump to."""
        timers = self._timers
        while timers and timers[0][2].done():
            heapq.heappop(timers)
        if not timers and until is None:
            return False
        at = timers[0][0] if timers else until
        assert at is not None
        if until is not None:
            at = min(at, until)
        if at > self._now:
            self._now = at
        self.wakeups += 1
        while timers and timers[0][0] <= self._now:
            _, _, fut = heapq.heappop(timers)
            if not fut.done():
                fut.set_result(None)
        return True

    def new_event_loop(self) -> VirtualEventLoop:
        return VirtualEventLoop(self)

    def run(self, main: Coroutine[Any, Any, T], *, debug: bool | None = None) -> T:
        """Run ``main`` to completion on a fresh virtual-time event loop."""
        with asyncio.Runner(debug=debug, loop_factory=self.new_event_loop) as runner:
            return runner.run(main)

    def __repr__(self) -> str:
        return f"VirtualClock(now={self._now:.6f}, pending={self.pending()})"


class _IdleSelector(selectors.BaseSelector):
    """Wraps the real selector; where the loop would block, advance the clock instead."""

    def __init__(self, clock: VirtualClock) -> None:
        self._clock = clock
        self._inner = selectors.DefaultSelector()

    def register(
        self, fileobj: FileDescriptorLike, events: int, data: Any = None
    ) -> selectors.SelectorKey:
        return self._inner.register(fileobj, events, data)

    def unregister(self, fileobj: FileDescriptorLike) -> selectors.SelectorKey:
        return self._inner.unregister(fileobj)

    def modify(
        self, fileobj: FileDescriptorLike, events: int, data: Any = None
    ) -> selectors.SelectorKey:
        return self._inner.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        events = self._inner.select(0)
        if events or (timeout is not None and timeout <= 0):
            return events
        # nothing is ready to run: every task waits, so virtual time may move on (to the
        # loop's next timer at the latest, when the loop's time is the clock's)
        clock = self._clock
        until = None if timeout is None or not clock.loop_time else clock.now() + timeout
        if clock.advance(until):
            return []
        return self._inner.select(timeout)

    def close(self) -> None:
        self._inner.close()

    def get_map(self) -> Mapping[FileDescriptorLike, selectors.SelectorKey]:
        return self._inner.get_map()


class VirtualEventLoop(asyncio.SelectorEventLoop):
    """An ordinary selector event loop whose idle moments advance a :class:`VirtualClock`."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(_IdleSelector(clock))
        #: the clock this loop advances
        self.clock = clock
        if clock.loop_time:
            # a timer is due when the clock is within this of it: the clock jumps to
            # now + (when - now), which rounds a few ulps off ``when`` (2e-7 s at epoch times)
            self._clock_resolution = max(self._clock_resolution, 1e-6)

    def time(self) -> float:
        """The clock's time with ``loop_time``, else the real monotonic time."""
        return self.clock.now() if self.clock.loop_time else super().time()
