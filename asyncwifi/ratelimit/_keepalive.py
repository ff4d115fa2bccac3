"""Scroll keep-alive: every open scroll keeps a place in the short windows for its next page.

spec §3: a scroll id lapses when its next request comes more than a scroll window after the
previous one. Earliest-deadline-first ordering (DESIGN "Rate limits" 5) is not enough on its
own: a window of ``count`` admissions in any ``span`` (61 s) frees a place only when its
oldest admission is ``span`` old, so after a burst that fills the window, a scroll whose
previous page was in the first seconds of the burst cannot be continued in time, whatever
order the waiters are in; and across processes sharing a key, another process's ordinary
request takes the place a continuation was waiting for.

The rule (sans-I/O, one owner; the Lua script of ``RedisStore`` mirrors it): each open
scroll has a *due* time, the latest clock time its next request may be admitted at (its
last admission plus its horizon). Earliest due first, the k-th open scroll's next request
takes the k-th place that frees in every window. An admission may not raise the number of
other scrolls that would get no place by their due time (a stale due time, or a burst made
before this rule saw it, blocks nobody for more than one scroll window). A scroll's own
request also waits, while its due time allows, until the request after it will have a
place in time; once admitted it replaces its due time with the next one. Only windows
shorter than the longest are checked when there are several: the day is a budget, and
keeping its last places for scrolls that lapse when the day is spent anyway would only
leave them unused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from asyncwifi.ratelimit._window import WindowLog, Windows

__all__ = ["KeepAlive", "KeepAlives", "keepalive_logs", "next_change", "place", "shortfall"]


class KeepAlive:
    """One open scroll: after each of its admissions it needs another within ``horizon``
    clock seconds (its scroll window less the margin for the road)."""

    __slots__ = ("horizon", "token")

    def __init__(self, token: str, horizon: float) -> None:
        #: names the scroll in the store (shared between processes for ``RedisStore``)
        self.token = token
        self.horizon = horizon

    def __repr__(self) -> str:
        return f"KeepAlive({self.token!r}, horizon={self.horizon:g})"


class _Due(NamedTuple):
    token: str
    at: float


def keepalive_logs(windows: Windows) -> list[WindowLog]:
    """The windows the rule checks: all but the longest, or the only one."""
    logs = windows.logs
    if len(logs) <= 1:
        return list(logs)
    longest = max(w.span for w in logs)
    return [w for w in logs if w.span < longest]


def place(logs: Sequence[WindowLog], now: float, k: int, extra: int) -> tuple[float, bool]:
    """When the ``k``-th next admission could go in every window, were ``extra`` admissions
    logged at ``now`` first; and whether waiting can make it earlier (False when a window
    needs the place of an admission made at or after ``now``, which frees only a span later
    however long one waits).

    The ``k``-th next admission takes the place of the window's ``used + extra + k -
    count``-th oldest admission, which frees ``span`` after it was made.
    """
    at, movable = now, True
    for w in logs:
        used = w.used(now)
        idx = used + extra + k - w.count
        if idx <= 0:
            continue
        if idx <= used:
            times = w.times()
            t = times[len(times) - used + idx - 1] + w.span
        else:
            t, movable = now + w.span, False
        if t > at:
            at = t
    return at, movable


def shortfall(logs: Sequence[WindowLog], now: float, due: Sequence[float], extra: int) -> int:
    """How many of the due times (sorted) could not each get one admission by then, were
    ``extra`` admissions logged at ``now`` first: earliest due first, the ``k``-th takes
    the ``k``-th place that frees (places taken at or after ``now`` free only after every
    due time, a due time being less than a span away)."""
    return sum(1 for k, d in enumerate(due, 1) if place(logs, now, k, extra)[0] > d)


def next_change(logs: Sequence[WindowLog], now: float, due: Sequence[float]) -> float:
    """When the rule's answer may change: a window's oldest admission leaves it, or one
    of the due times passes (and its scroll is forgotten)."""
    retry = min((d for d in due if d > now), default=math.inf)
    for w in logs:
        used = w.used(now)
        exit_at = w.times()[len(w.times()) - used] + w.span if used else now + w.span
        retry = min(retry, exit_at)
    return retry


class KeepAlives:
    """The due times of the open scrolls of one store, and the rule applied to its logs."""

    __slots__ = ("_due",)

    def __init__(self) -> None:
        self._due: dict[str, float] = {}

    def __bool__(self) -> bool:
        return bool(self._due)

    def blocks(self, windows: Windows, now: float, keepalive: KeepAlive | None) -> float | None:
        """None when one admission at ``now`` (for ``keepalive``'s scroll, if given) may go;
        otherwise the clock time to ask again.

        1. It may not take the place another open scroll's next request needs.
        2. A scroll's own request waits, while its own due time allows, until the request
           after it will have a place in time (after a burst it goes a little later
           rather than leave its successor no place before the window frees).
        """
        due = self._due
        for token in [t for t, d in due.items() if d < now]:
            del due[token]
        if not due and keepalive is None:
            return None
        logs = keepalive_logs(windows)
        own = None if keepalive is None else due.get(keepalive.token)
        others = sorted(d for t, d in due.items() if keepalive is None or t != keepalive.token)
        if others and shortfall(logs, now, others, 1) > shortfall(logs, now, others, 0):
            return next_change(logs, now, others)
        if keepalive is not None:
            at, movable = place(logs, now, len(others) + 1, 1)
            retry = at - keepalive.horizon
            if own is not None and own < retry:
                retry = own
            if movable and retry > now:
                return retry
        return None

    def admitted(self, keepalive: KeepAlive | None, at: float) -> None:
        """Record a scroll's admission at ``at``: its next is due ``horizon`` later."""
        if keepalive is not None:
            self._due[keepalive.token] = at + keepalive.horizon

    def drop(self, token: str) -> bool:
        """The scroll ended: it needs no place any more (True if it had one)."""
        return self._due.pop(token, None) is not None

    def due(self) -> list[_Due]:
        """The open scrolls' due times, earliest first (for reprs and tests)."""
        return sorted((_Due(t, d) for t, d in self._due.items()), key=lambda x: x.at)
