"""A share of the day's request quota, divided between the resources a sync keeps.

The key's day (spec §8: 15,000 requests) is shared with whatever else uses it, so a sync
takes ``share`` of it, and divides that between resources: events get the largest part
(they only grow, and a gap in them is what users notice), the contact reconcile a bounded
part (a full scan of a big organization must not eat the day), hotspots and segments
little (a request each). A resource past its part waits for the next UTC day; events may
also use what the others left unspent, so they never starve.

With a ledger (:class:`~asyncwifi.sync.RedisLedger`) the day's counts are shared: every
process of the key (and a daemon restarted mid-day) adds what it spent and reads the
totals before each wait, so together they stay within the share.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Protocol

from asyncwifi._clock import Clock
from asyncwifi.errors import ValidationError
from asyncwifi.sync._ledger import BudgetLedger

__all__ = ["DEFAULT_SHARES", "Allowance", "Budget"]

log = logging.getLogger("asyncwifi.sync")

DAY = 86_400.0
#: how the sync's requests are divided (a fraction of its budget per resource)
DEFAULT_SHARES: Mapping[str, float] = {
    "events": 0.6,
    "contacts": 0.3,
    "hotspots": 0.05,
    "segments": 0.05,
}


class Allowance(Protocol):
    """What a feed asks before it spends requests (:class:`Budget`, or a backfill's check
    that the day's quota can still keep a scroll alive)."""

    async def wait(self, resource: str, need: int = 1) -> bool: ...

    def spend(self, resource: str, requests: int) -> None: ...


class Budget:
    """Requests a day per resource; counts what each spent; waits for the next day."""

    def __init__(
        self,
        day_limit: int,
        share: float = 1.0,
        *,
        clock: Clock,
        shares: Mapping[str, float] | None = None,
        ledger: BudgetLedger | None = None,
    ) -> None:
        if not 0.0 < share <= 1.0:
            raise ValidationError(f"the budget share must be within (0, 1], got {share!r}")
        parts = dict(shares or DEFAULT_SHARES)
        if any(v < 0 for v in parts.values()) or not math.isclose(sum(parts.values()), 1.0):
            raise ValidationError(f"resource shares must be >= 0 and sum to 1, got {parts!r}")
        self.total = max(1, int(day_limit * share))
        self.shares = parts
        self.clock = clock
        self._day = self._today()
        self.spent: dict[str, int] = dict.fromkeys(parts, 0)
        self.ledger = ledger
        #: spent here and not yet added to the ledger
        self._unsent: dict[str, int] = {}
        self._ledger_down = False

    def _today(self) -> int:
        return int(self.clock.now() // DAY)

    def _roll(self) -> None:
        today = self._today()
        if today != self._day:
            self._day = today
            self.spent = dict.fromkeys(self.shares, 0)
            self._unsent = {}

    def allowance(self, resource: str) -> int:
        """Requests ``resource`` may spend today (events: also what the others left)."""
        self._roll()
        own = int(self.total * self.shares.get(resource, 0.0))
        if resource != "events":
            return own
        others = sum(self.spent[r] for r in self.shares if r != "events")
        return self.total - others

    def remaining(self, resource: str) -> int:
        """What ``resource`` may still spend today."""
        return max(0, self.allowance(resource) - self.spent.get(resource, 0))

    def spend(self, resource: str, requests: int) -> None:
        """Count ``requests`` sent for ``resource``."""
        self._roll()
        self.spent[resource] = self.spent.get(resource, 0) + requests
        if self.ledger is not None:
            self._unsent[resource] = self._unsent.get(resource, 0) + requests

    async def refresh(self) -> None:
        """With a ledger: add what was spent here, and take the day's totals (every
        process's). Redis failing: keep counting here, warn once, try again next time."""
        if self.ledger is None:
            return
        self._roll()
        day, unsent = self._day, self._unsent
        self._unsent = {}
        try:
            totals = await self.ledger.add(day, unsent)
        except Exception as exc:
            for resource, count in unsent.items():  # added next time
                self._unsent[resource] = self._unsent.get(resource, 0) + count
            if not self._ledger_down:
                log.warning("sync: the shared budget is unreachable (%s); counting here", exc)
            self._ledger_down = True
            return
        if self._ledger_down:
            log.warning("sync: the shared budget is back")
            self._ledger_down = False
        if day == self._day:
            for resource in set(self.spent) | set(totals):
                self.spent[resource] = totals.get(resource, 0) + self._unsent.get(resource, 0)

    def reset_at(self) -> float:
        """When the next UTC day starts (clock seconds)."""
        return (self._today() + 1) * DAY

    async def wait(self, resource: str, need: int = 1) -> bool:
        """Wait until ``resource`` may spend ``need`` requests; True when it had to wait."""
        await self.refresh()
        if self.remaining(resource) >= need:
            return False
        reset = self.reset_at()
        log.warning(
            "sync: the %s part of the budget (%d requests today) is spent; sleeping %.0f s "
            "until the UTC day resets",
            resource,
            self.allowance(resource),
            reset - self.clock.now(),
        )
        await self.clock.sleep(max(0.0, reset - self.clock.now()))
        return True
