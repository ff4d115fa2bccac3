"""Injectable time: every part of asyncwifi reads the time and sleeps through a ``Clock``.

``now()`` is seconds since the Unix epoch (UTC) on the clock's own time line, so that the
gateway's UTC-aligned windows, JWT ``exp`` claims and ``Retry-After`` all live on one axis.
``ScaledClock`` runs that time line faster than real time: the client and the simulator
share one, and a "minute" lasts 0.6 s of real time at ``speed=100``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol, runtime_checkable

from asyncwifi.errors import ConfigurationError

__all__ = ["Clock", "ScaledClock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """What asyncwifi needs of time: read it, sleep on it, convert a span to real seconds."""

    def now(self) -> float:
        """Seconds since the epoch (UTC) on this clock's time line."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` of this clock's time."""
        ...

    def real(self, seconds: float) -> float:
        """How many real seconds ``seconds`` of this clock's time last (for timeouts)."""
        ...


class SystemClock:
    """The wall clock and ``asyncio.sleep``: what production code uses."""

    __slots__ = ()

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def real(self, seconds: float) -> float:
        return seconds

    def __repr__(self) -> str:
        return "SystemClock()"


class ScaledClock:
    """A clock that runs ``speed`` times faster than real time from ``start``.

    Built on the monotonic clock, so it never jumps backwards. Share one instance between a
    client and a :class:`~asyncwifi.testing.Simulator` to run minutes and days in seconds.
    """

    __slots__ = ("_m0", "speed", "start")

    def __init__(self, speed: float = 1.0, *, start: float | None = None) -> None:
        if not isinstance(speed, int | float) or not speed > 0 or speed == float("inf"):
            raise ConfigurationError(f"ScaledClock speed must be a positive number, got {speed!r}")
        #: how many clock seconds pass per real second
        self.speed = float(speed)
        #: the clock's time (epoch seconds) at construction
        self.start = time.time() if start is None else float(start)
        self._m0 = time.monotonic()

    def now(self) -> float:
        return self.start + (time.monotonic() - self._m0) * self.speed

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds) / self.speed)

    def real(self, seconds: float) -> float:
        return max(0.0, seconds) / self.speed

    def __repr__(self) -> str:
        return f"ScaledClock(speed={self.speed:g}, start={self.start:.3f})"
