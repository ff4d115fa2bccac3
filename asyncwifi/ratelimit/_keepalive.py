"""Scroll keep-alive: every open scroll keeps a place in the short windows for its next page.

spec §3: a scroll id lapses a scroll window after its last request, and after a burst a
window frees a place only ``span`` (61 s) after its oldest admission: earliest deadline
first alone cannot continue a scroll whose page went early in the burst. The rule (sans-I/O;
``RedisStore``'s Lua script mirrors it): each open scroll is *due* by its last admission plus
its horizon; earliest due first, the k-th takes the k-th place that frees. An admission may
not leave more other scrolls without a place by their due time; a scroll's own request
waits, while its due time allows, until its successor will have a place. Only windows
shorter than the longest are checked (the day is a budget).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from asyncwifi._protocol import require_positive
from asyncwifi.ratelimit._limits import WindowSpec
from asyncwifi.ratelimit._log import Log

__all__ = ["KeepAlive", "blocked_until", "checked", "place", "shortfall"]


@dataclass(frozen=True, slots=True)
class KeepAlive:
    """One open scroll (``token`` names it in the store): after each of its admissions it
    needs another within ``horizon`` clock seconds (its scroll window less the road's margin)."""

    token: str
    horizon: float

    @classmethod
    def open(cls, horizon: float) -> KeepAlive:
        """A new scroll's handle, under a token of its own."""
        return cls(uuid.uuid4().hex[:16], require_positive(horizon, "a keep-alive horizon"))


def checked(specs: Sequence[WindowSpec]) -> list[WindowSpec]:
    """The windows the rule checks: all but the longest, or the only one."""
    longest = max((w.span for w in specs), default=0.0)
    return [w for w in specs if w.span < longest] if len(specs) > 1 else list(specs)


def place(log: Log, specs: Sequence[WindowSpec], now: float, n: int) -> tuple[float, bool]:
    """When the ``n``-th admission from ``now`` on could go in every window (it takes the
    place of the window's ``used + n - count``-th oldest, free ``span`` after it); and whether
    waiting helps (not if that one is itself among the ``n``, at or after now)."""
    at, movable, times = now, True, log.times
    for w in specs:
        used = log.used(now, w.span)
        idx = used + n - w.count
        if idx > used:
            at, movable = max(at, now + w.span), False
        elif idx > 0:
            at = max(at, times[len(times) - used + idx - 1] + w.span)
    return at, movable


def shortfall(
    log: Log, specs: Sequence[WindowSpec], now: float, due: Sequence[float], extra: int
) -> int:
    """How many of the due times (sorted) could not each get a place by then, were ``extra``
    admissions logged at ``now`` first (earliest due first, the k-th takes the k-th place)."""
    return sum(1 for k, d in enumerate(due, 1) if place(log, specs, now, extra + k)[0] > d)


def blocked_until(
    log: Log, due: dict[str, float], now: float, keepalive: KeepAlive | None
) -> float:
    """Until when one admission at ``now`` (for ``keepalive``'s scroll, if given) must wait: at
    or before ``now``, it may go. ``due`` maps each open scroll's token to the latest time
    its next request may go at (those past are dropped)."""
    for token in [t for t, d in due.items() if d < now]:
        del due[token]
    specs, mine = checked(log.specs), keepalive.token if keepalive else ""
    others = sorted(d for t, d in due.items() if t != mine)
    if shortfall(log, specs, now, others, 1) > shortfall(log, specs, now, others, 0):
        # ask again when the answer may change: a window's oldest leaves, a due time passes
        retry = min((d for d in others if d > now), default=math.inf)
        for w in specs:
            used = log.used(now, w.span)
            retry = min(retry, log.times[-used] + w.span if used else now + w.span)
        return retry
    if keepalive is None:
        return now
    # this admission, every other scroll's next, then its own next: while its due time
    # allows, it waits until that last one will have a place in time
    at, movable = place(log, specs, now, len(others) + 2)
    return min(at - keepalive.horizon, due.get(mine, math.inf)) if movable else now
