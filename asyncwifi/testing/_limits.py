"""The gateway's limits, sans-I/O: Kong's ``rate-limiting`` and ``response-ratelimiting``.

Both classes take the time as an argument and never sleep or touch a socket, so the whole
arithmetic is testable by stepping a number. Facts followed (gateway.md):

- windows are fixed and aligned to UTC (minute on :00, day at 00:00) in ``"fixed"`` mode;
  ``"sliding"`` is the strict alternative: at most N admissions in any window of the period;
  ``"off"`` counts (the headers stay truthful) but never refuses;
- ``X-RateLimit-Remaining-<Period>`` already includes the current request;
  ``RateLimit-*`` describe the most constrained period (lowest remaining, ties to the longer
  window); ``RateLimit-Reset`` is in seconds, at least 1; a 429 adds ``Retry-After`` = reset;
- refused requests do not count, unless ``count_refused`` (Kong's Redis-backed counting);
- object limits: remaining = max(0, remaining_before - increment); a response that
  increments an object whose quota was already spent becomes a bodyless 429, and is not
  counted (Kong's ``stop_log``).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = ["Decision", "Mode", "ObjectLimiter", "RateLimiter"]

Mode = Literal["fixed", "sliding", "off"]
MODES: tuple[str, ...] = ("fixed", "sliding", "off")

MINUTE = 60.0
DAY = 86_400.0


@dataclass(slots=True)
class Decision:
    """The gateway's verdict on one request, with the headers to send on its response."""

    #: whether the request may reach the API
    allowed: bool
    #: ``X-RateLimit-*`` and ``RateLimit-*`` headers (plus ``Retry-After`` when refused)
    headers: list[tuple[str, str]]
    #: the exact clock seconds until the most constrained period resets
    reset: float
    #: ``"minute"`` or ``"day"``: the most constrained period
    period: str


class _Period:
    """One configured period: its limit and its counting state (fixed or sliding)."""

    __slots__ = ("count", "hits", "length", "limit", "name", "title", "window_start")

    def __init__(self, name: str, length: float, limit: int) -> None:
        self.name = name
        self.title = name.capitalize()
        self.length = length
        self.limit = limit
        self.window_start = -math.inf
        self.count = 0
        self.hits: deque[float] = deque()

    def used(self, now: float, sliding: bool) -> int:
        if sliding:
            horizon = now - self.length
            hits = self.hits
            while hits and hits[0] <= horizon:
                hits.popleft()
            return len(hits)
        start = (now // self.length) * self.length  # spec: windows aligned to UTC
        if start != self.window_start:
            self.window_start = start
            self.count = 0
        return self.count

    def reset_in(self, now: float, used: int, sliding: bool) -> float:
        """Clock seconds until this period gives back room for one more request."""
        if not sliding:
            return self.window_start + self.length - now
        if not self.hits:
            return self.length
        # the (used - limit + 1)-th oldest hit must leave the window for one more to fit
        k = min(max(used - self.limit, 0), len(self.hits) - 1)
        return self.hits[k] + self.length - now

    def record(self, now: float, sliding: bool) -> None:
        if sliding:
            self.hits.append(now)
        else:
            self.count += 1


class RateLimiter:
    """Request limits per minute and per day, counted like Kong's ``rate-limiting`` plugin."""

    __slots__ = ("_periods", "count_refused", "fractional_reset", "mode")

    def __init__(
        self,
        *,
        minute: int = 60,
        day: int = 15_000,
        mode: Mode = "fixed",
        count_refused: bool = False,
        fractional_reset: bool = False,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"rate_limit_mode must be one of {MODES}, not {mode!r}")
        if minute < 1 or day < 1:
            raise ValueError("limits must be at least 1")
        self._periods = (_Period("minute", MINUTE, minute), _Period("day", DAY, day))
        #: ``"fixed"``, ``"sliding"`` or ``"off"``
        self.mode: Mode = mode
        #: whether refused requests count too (Kong's Redis policy)
        self.count_refused = count_refused
        #: send reset values as fractional seconds instead of Kong's integers
        self.fractional_reset = fractional_reset

    @property
    def limits(self) -> dict[str, int]:
        """The configured limit of each period."""
        return {p.name: p.limit for p in self._periods}

    def remaining(self, now: float) -> dict[str, int]:
        """What each period has left at ``now`` (no request is recorded)."""
        sliding = self.mode == "sliding"
        return {p.name: max(0, p.limit - p.used(now, sliding)) for p in self._periods}

    def format_reset(self, seconds: float) -> str:
        """A reset value as the gateway sends it: whole seconds, at least 1 (or fractional)."""
        if self.fractional_reset:
            return f"{max(seconds, 0.001):.3f}"
        return str(max(1, math.ceil(seconds - 1e-9)))

    def decide(self, now: float, *, noise: int = 0) -> Decision:
        """Judge one request arriving at ``now``, record it, and build its headers.

        ``noise`` is added to the displayed remaining counts (approximate node counters, a
        fault): enforcement stays exact.
        """
        sliding = self.mode == "sliding"
        used = [p.used(now, sliding) for p in self._periods]
        stop: int | None = None
        if self.mode != "off":
            for i, p in enumerate(self._periods):
                if p.limit - used[i] <= 0:
                    stop = i  # the last (longest) exhausted period wins, as in Kong
        headers: list[tuple[str, str]] = []
        best: tuple[int, float, int] | None = None  # (remaining, -length, index)
        for i, p in enumerate(self._periods):
            left = p.limit - used[i]
            if stop is None or stop == i:
                left -= 1  # the remaining count already includes this request
            left = max(0, left)
            shown = min(p.limit, max(0, left + noise)) if noise else left
            headers.append((f"X-RateLimit-Limit-{p.title}", str(p.limit)))
            headers.append((f"X-RateLimit-Remaining-{p.title}", str(shown)))
            key = (left, -p.length, i)
            if best is None or key < best:
                best = key
        assert best is not None
        chosen = self._periods[best[2]]
        reset = chosen.reset_in(now, used[best[2]], sliding)
        shown_left = headers[2 * best[2] + 1][1]
        reset_text = self.format_reset(reset)
        headers.append(("RateLimit-Limit", str(chosen.limit)))
        headers.append(("RateLimit-Remaining", shown_left))
        headers.append(("RateLimit-Reset", reset_text))
        allowed = stop is None
        if not allowed:
            headers.append(("Retry-After", reset_text))
        if allowed or self.count_refused:
            for p in self._periods:
                p.record(now, sliding)
        return Decision(allowed, headers, reset, chosen.name)


class ObjectLimiter:
    """Per-object daily limits, counted like Kong's ``response-ratelimiting`` plugin."""

    __slots__ = ("_day", "_used", "limits")

    def __init__(self, limits: Mapping[str, int] | None = None) -> None:
        #: the daily limit of each object name (``{"hotspots": 10}``)
        self.limits = dict(limits or {})
        for name, value in self.limits.items():
            if value < 0 or not name.isidentifier():
                raise ValueError(f"bad object limit {name!r}={value!r}")
        self._day = -math.inf
        self._used = dict.fromkeys(self.limits, 0)

    def _roll(self, now: float) -> None:
        day = (now // DAY) * DAY  # the day resets at 00:00 UTC
        if day != self._day:
            self._day = day
            self._used = dict.fromkeys(self.limits, 0)

    def snapshot(self, now: float) -> dict[str, int]:
        """Each object's remaining count before a request runs (Kong's access phase)."""
        self._roll(now)
        return {name: limit - self._used[name] for name, limit in self.limits.items()}

    def settle(
        self, now: float, before: Mapping[str, int], increments: Mapping[str, int]
    ) -> tuple[list[tuple[str, str]], bool]:
        """Headers for a response that touched ``increments`` objects, and whether to stop.

        A stopped response (object quota already spent before the request) is not counted.
        """
        headers: list[tuple[str, str]] = []
        stop = False
        for name, limit in self.limits.items():
            inc = increments.get(name, 0)
            left = before.get(name, limit)
            title = name[:1].upper() + name[1:]
            headers.append((f"X-RateLimit-Limit-{title}-Day", str(limit)))
            headers.append((f"X-RateLimit-Remaining-{title}-Day", str(max(0, left - inc))))
            if inc > 0 and left <= 0:
                stop = True
        if not stop:
            self._roll(now)
            for name in self.limits:
                self._used[name] += increments.get(name, 0)
        return headers, stop
