"""Events appearing continuously: a background task adding new events to organizations.

A fleet syncing live data needs a platform where events keep arriving. :class:`LiveEvents`
adds, on the simulator's clock, ``rate`` events per clock second to each organization it
feeds (whole events: the fraction carries over to the next tick), at the clock's now, as
:meth:`SimulatorData.add_events` does. A share of them (``late_share``) may appear late,
dated up to ``late_by`` seconds before they appear (a visit written when the guest
leaves); and ``contact_changes`` contacts per clock second may change (their ``modified``
moves), so that a sync's contact refresh has changes to read.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
from collections.abc import Sequence

from asyncwifi._clock import Clock
from asyncwifi._protocol import require_positive
from asyncwifi.errors import ConfigurationError
from asyncwifi.testing._api_contacts import modify_contact
from asyncwifi.testing._tenant import Tenant
from asyncwifi.testing._util import iso_ms

__all__ = ["LiveEvents"]


class LiveEvents:
    """Adds ``rate`` events per clock second to each of ``tenants`` until stopped.

    It wakes every ``tick`` clock seconds (default: often enough for about one event per
    tick, between 1 and 60 s) and sleeps on ``clock``: with a clock that moves only when
    told to, it moves that clock (use :meth:`feed` by hand there instead).
    """

    def __init__(
        self,
        tenants: Sequence[Tenant],
        clock: Clock,
        rate: float,
        tick: float | None = None,
        *,
        late_share: float = 0.0,
        late_by: float = 0.0,
        contact_changes: float = 0.0,
    ) -> None:
        require_positive(rate, "the feed's rate", error=ConfigurationError)
        if tick is not None:
            require_positive(tick, "the feed's tick", error=ConfigurationError)
        require_positive(late_by, "the feed's late_by", zero=True, error=ConfigurationError)
        require_positive(contact_changes, "contact_changes", zero=True, error=ConfigurationError)
        if not 0 <= late_share <= 1 or (late_share and not late_by):
            raise ConfigurationError("late_share is a share (0 to 1) of events late by late_by s")
        self.late_share, self.late_by = float(late_share), float(late_by)
        #: contacts changed per clock second, per organization
        self.contact_changes = float(contact_changes)
        #: events that appeared late, and contacts changed, so far (per organization)
        self.late = self.changed = 0
        self._random = random.Random(0x1A7E)
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
        self._since, self.added, self.late, self.changed = self.clock.now(), 0, 0, 0
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
        """Add the events due by the clock's now to each organization (a share of them
        late), and change the contacts due; how many events each got."""
        now = self.clock.now()
        elapsed = now - self._since
        changes = math.floor(elapsed * self.contact_changes) - self.changed
        for _ in range(max(0, changes)):
            for tenant in self.tenants:
                order = tenant.data.contact_order  # ids, live or deleted
                cid = self._random.choice(order) if order else None
                if cid is not None and tenant.data.contact(cid) is not None:
                    modify_contact(tenant.data, cid, now, lastLogin=iso_ms(now))
            self.changed += 1
        due = math.floor(elapsed * self.rate) - self.added
        if due <= 0:
            return 0
        late = math.floor((self.added + due) * self.late_share) - self.late
        for tenant in self.tenants:
            if due - late:
                tenant.data.add_events(due - late)
            if late:  # dated before now, up to late_by: they appear late
                tenant.data.add_events(late, at=now - self.late_by, until=now - 1)
        self.added += due
        self.late += late
        return due

    async def _run(self) -> None:
        while True:
            await self.clock.sleep(self.tick)
            self.feed()
