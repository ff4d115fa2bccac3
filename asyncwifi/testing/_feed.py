"""Events appearing continuously: a background task adding new events to organizations.

A fleet syncing live data needs a platform where events keep arriving. :class:`LiveEvents`
adds, on the simulator's clock, ``rate`` events per clock second to each organization it
feeds (whole events: the fraction carries over to the next tick), at the clock's now, as
:meth:`SimulatorData.add_events` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Sequence

from asyncwifi._clock import Clock
from asyncwifi._protocol import require_positive
from asyncwifi.errors import ConfigurationError
from asyncwifi.testing._tenant import Tenant

__all__ = ["LiveEvents"]


class LiveEvents:
    """Adds ``rate`` events per clock second to each of ``tenants`` until stopped.

    It wakes every ``tick`` clock seconds (default: often enough for about one event per
    tick, between 1 and 60 s) and sleeps on ``clock``: with a clock that moves only when
    told to, it moves that clock (use :meth:`feed` by hand there instead).
    """

    def __init__(
        self, tenants: Sequence[Tenant], clock: Clock, rate: float, tick: float | None = None
    ) -> None:
        require_positive(rate, "the feed's rate", error=ConfigurationError)
        if tick is not None:
            require_positive(tick, "the feed's tick", error=ConfigurationError)
        self.tenants = list(tenants)
        self.clock = clock
        #: events per clock second, per organization
        self.rate = float(rate)
        self.tick = tick if tick is not None else min(60.0, max(1.0, 1.0 / self.rate))
        #: events added so far, per organization
        self.added = 0
        self._since = 0.0
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start feeding (in the running event loop)."""
        if self.running:
            return
        self._since, self.added = self.clock.now(), 0
        self._task = asyncio.get_running_loop().create_task(self._run(), name="asyncwifi-feed")

    async def stop(self) -> None:
        """Stop feeding; an error the feed met is raised here."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def feed(self) -> int:
        """Add the events due by the clock's now to each organization; how many each got."""
        due = math.floor((self.clock.now() - self._since) * self.rate) - self.added
        if due <= 0:
            return 0
        for tenant in self.tenants:
            tenant.data.add_events(due)
        self.added += due
        return due

    async def _run(self) -> None:
        while True:
            await self.clock.sleep(self.tick)
            self.feed()
