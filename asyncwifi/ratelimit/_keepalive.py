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
from collections.abc import Sequence

from asyncwifi.ratelimit._limits import WindowSpec
from asyncwifi.ratelimit._log import Log

__all__ = ["KeepAlive", "KeepAlives", "checked", "place", "shortfall"]


class KeepAlive:
    """One open scroll (``token`` names it in the store): after each of its admissions it
    needs another within ``horizon`` clock seconds (its scroll window less the road's margin)."""

    __slots__ = ("horizon", "token")

    def __init__(self, token: str, horizon: float) -> None:
        self.token, self.horizon = token, horizon

    def __repr__(self) -> str:
        return f"KeepAlive({self.token!r}, horizon={self.horizon:g})"


def checked(specs: Sequence[WindowSpec]) -> list[WindowSpec]:
    """The windows the rule checks: all but the longest, or the only one."""
    longest = max((w.span for w in specs), default=0.0)
    return [w for w in specs if w.span < longest] if len(specs) > 1 else list(specs)


def place(
    log: Log, specs: Sequence[WindowSpec], now: float, k: int, extra: int
) -> tuple[float, bool]:
    """When the ``k``-th next admission could go in every window, were ``extra`` logged at
    ``now`` first (it takes the place of the window's ``used + extra + k - count``-th oldest,
    free ``span`` after it); and whether waiting helps (not if that one is at or after now)."""
    at, movable, times = now, True, log.times
    for w in specs:
        used = log.used(now, w.span)
        idx = used + extra + k - w.count
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
    return sum(1 for k, d in enumerate(due, 1) if place(log, specs, now, k, extra)[0] > d)


class KeepAlives:
    """The due times of the open scrolls of one store (``due``: token -> the latest clock time
    its next request may be admitted at), and the rule applied to its log."""

    __slots__ = ("due",)

    def __init__(self) -> None:
        self.due: dict[str, float] = {}

    def blocks(self, log: Log, now: float, keepalive: KeepAlive | None) -> float | None:
        """None when one admission at ``now`` (for ``keepalive``'s scroll, if given) may go,
        else the clock time to ask again: it may not take the place another open scroll's
        next request needs, and a scroll's own request waits, while its due time allows,
        until the one after it will have a place in time."""
        due = self.due
        for token in [t for t, d in due.items() if d < now]:
            del due[token]
        if not due and keepalive is None:
            return None
        specs = checked(log.specs)
        own = None if keepalive is None else due.get(keepalive.token)
        others = sorted(d for t, d in due.items() if keepalive is None or t != keepalive.token)
        if others and shortfall(log, specs, now, others, 1) > shortfall(log, specs, now, others, 0):
            # ask again when the answer may change: a window's oldest leaves, a due time passes
            retry = min((d for d in others if d > now), default=math.inf)
            for w in specs:
                used = log.used(now, w.span)
                retry = min(retry, log.times[-used] + w.span if used else now + w.span)
            return retry
        if keepalive is not None:
            at, movable = place(log, specs, now, len(others) + 1, 1)
            retry = min(at - keepalive.horizon, own if own is not None else math.inf)
            if movable and retry > now:
                return retry
        return None

    def admitted(self, keepalive: KeepAlive | None, at: float) -> None:
        """Record a scroll's admission at ``at``: its next is due ``horizon`` later."""
        if keepalive is not None:
            self.due[keepalive.token] = at + keepalive.horizon

    def drop(self, token: str) -> None:
        """The scroll ended: it needs no place any more."""
        self.due.pop(token, None)
