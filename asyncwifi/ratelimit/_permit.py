"""The handle of one admission: ``async with scheduler.slot(...) as permit``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from asyncwifi.ratelimit._headers import RateLimitHeaders
from asyncwifi.ratelimit._queue import Ask

if TYPE_CHECKING:
    from asyncwifi.ratelimit._scheduler import Scheduler

__all__ = ["Permit"]


class Permit:
    """One admission held by ``async with scheduler.slot(...) as permit`` (released on exit):
    ``seq`` is its admission number, ``sent_at`` its clock time, ``ask`` what it asked for."""

    __slots__ = ("ask", "scheduler", "sent_at", "seq")

    def __init__(self, scheduler: Scheduler, ask: Ask) -> None:
        self.scheduler = scheduler
        self.ask = ask
        self.seq = 0
        self.sent_at = 0.0

    def observe(self, status: int, headers: Mapping[str, str] | RateLimitHeaders | None) -> None:
        """Feed the response back: remaining counts, a 429's pause, object quotas."""
        self.scheduler.observe(status, headers, sent_at=self.sent_at, seq=self.seq)

    def refund(self) -> None:
        """Give the admission back: only when the request certainly never left the process."""
        self.scheduler.refund(self.seq)

    async def __aenter__(self) -> Permit:
        self.seq = seq = await self.scheduler.admit(self.ask)
        self.sent_at = self.scheduler.sent_at(seq)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.scheduler.release(self.seq)

    def __repr__(self) -> str:
        return f"<Permit #{self.seq or '-'} {self.ask.tag}>"
