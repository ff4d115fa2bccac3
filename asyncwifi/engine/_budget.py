"""A share of the day's request quota, divided between the resources a sync keeps.

The key's day (spec §8: 15,000 requests) is shared with whatever else uses it, so a sync
takes ``share`` of it, and divides that between resources: events get the largest part
(they only grow, and a gap in them is what users notice), the contact reconcile a bounded
part (a full scan of a big organization must not eat the day), hotspots and segments
little (a request each). A resource past its part waits until its requests of the past
day age out; events may also use what the others left unspent, so they never starve.

What was spent is the limiter's count, nothing else: its admissions per tag over its day
window (:meth:`~asyncwifi.ratelimit.Scheduler.used`; the client tags each request by its
resource). With a :class:`~asyncwifi.RedisStore` that count is every process's on the key,
so syncs sharing a key stay together within the share, and a daemon restarted mid-day
finds what it spent.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Protocol

from asyncwifi._defaults import REQUEST_SHARE
from asyncwifi._protocol import require_share
from asyncwifi.errors import ValidationError
from asyncwifi.ratelimit import Scheduler

__all__ = ["DEFAULT_SHARES", "RECHECK", "Allowance", "Budget"]

log = logging.getLogger("asyncwifi.sync")

#: how the sync's requests are divided (a fraction of its budget per resource)
DEFAULT_SHARES: Mapping[str, float] = {
    "events": 0.6,
    "contacts": 0.3,
    "hotspots": 0.05,
    "segments": 0.05,
}
#: clock seconds between two looks at a spent part: requests age out of the day one by one
RECHECK = 300.0


class Allowance(Protocol):
    """What a feed asks before it spends requests (:class:`Budget`, or a backfill's check
    that the day's quota can still keep a scroll alive)."""

    async def wait(self, resource: str, need: int = 1) -> bool: ...

    async def has(self, resource: str, need: int = 1) -> bool: ...


class Budget:
    """``share`` of the day's requests of ``scheduler`` (its ``Limits.day``), divided per
    resource by ``shares``; counts read from the limiter."""

    def __init__(
        self,
        scheduler: Scheduler,
        share: float = REQUEST_SHARE,
        *,
        shares: Mapping[str, float] | None = None,
        recheck: float = RECHECK,
    ) -> None:
        share = require_share(share, "the budget share")  # share=True: refused, not 100 %
        parts = dict(shares or DEFAULT_SHARES)
        if any(v < 0 for v in parts.values()) or not math.isclose(sum(parts.values()), 1.0):
            raise ValidationError(f"resource shares must be >= 0 and sum to 1, got {parts!r}")
        day = scheduler.limits.day
        if day is None:
            raise ValidationError("a budget is a share of the day's quota: the limits have no day")
        self.scheduler = scheduler
        self.total = max(1, int(day.count * share))
        self.shares = parts
        self.recheck = recheck

    def allowance(self, resource: str, used: Mapping[str, int]) -> int:
        """Requests ``resource`` may spend in a day (events: also what the others left)."""
        if resource != "events":
            return int(self.total * self.shares.get(resource, 0.0))
        return self.total - sum(used.get(r, 0) for r in self.shares if r != "events")

    async def remaining(self, resource: str) -> int:
        """What ``resource`` may still spend now (the limiter's count of the past day)."""
        used = await self.scheduler.used()
        return max(0, self.allowance(resource, used) - used.get(resource, 0))

    async def has(self, resource: str, need: int = 1) -> bool:
        """Whether ``resource`` may spend ``need`` more requests now (a feed asks between
        two pages: a long scroll stops at its share, not at the end of its span)."""
        return await self.remaining(resource) >= need

    async def wait(self, resource: str, need: int = 1) -> bool:
        """Wait until ``resource`` may spend ``need`` requests; True when it had to wait."""
        waited = False
        while not await self.has(resource, need):
            if not waited:
                log.warning(
                    "sync: the %s part of the budget is spent for the past day; looking again "
                    "every %.0f s as its requests age out",
                    resource,
                    self.recheck,
                )
            waited = True
            await self.scheduler.clock.sleep(self.recheck)
        return waited
