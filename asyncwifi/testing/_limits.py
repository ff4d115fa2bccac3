"""The gateway's limits, sans-I/O: Kong's ``rate-limiting`` and ``response-ratelimiting``.

Both classes take the time as an argument and never sleep or touch a socket, so the whole
arithmetic is testable by stepping a number. Facts followed (gateway.md):

- windows are fixed and aligned to UTC (minute on :00, day at 00:00) in ``"fixed"`` mode;
  ``"skewed"`` is the same on a gateway clock that is off by ``skew`` seconds (windows
  start at :00 of *its* clock, not ours); ``"sliding"`` is the strict alternative: at most
  N admissions in any window of the period; ``"weighted"`` is the commercial plugin's
  two-window estimate (``previous * (1 - elapsed / period) + current``), which punishes a
  burst at the start of a window; ``"off"`` counts (the headers stay truthful) but never
  refuses. ``RateLimit-Reset`` is always when the period next has room for one more;
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

from asyncwifi.errors import ConfigurationError

__all__ = ["GateResult", "Mode", "ObjectLimiter", "RateLimiter"]

Mode = Literal["fixed", "skewed", "sliding", "weighted", "off"]
MODES: tuple[str, ...] = ("fixed", "skewed", "sliding", "weighted", "off")
#: the gateway clock's offset in ``"skewed"`` mode when none is given (seconds, off-grid)
DEFAULT_SKEW = 23.0

MINUTE = 60.0
DAY = 86_400.0


@dataclass(slots=True)
class GateResult:
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
    """One configured period: its limit and its counting state (fixed, sliding or weighted).

    ``skew`` is added to the time before the fixed grid is applied (the gateway's clock).
    """

    __slots__ = ("count", "hits", "length", "limit", "name", "previous", "title", "window_start")

    def __init__(self, name: str, length: float, limit: int) -> None:
        self.name = name
        self.title = name.capitalize()
        self.length = length
        self.limit = limit
        self.window_start = -math.inf
        self.count = 0
        self.previous = 0
        self.hits: deque[float] = deque()

    def _roll(self, now: float, skew: float) -> float:
        """Move to the fixed window holding ``now``; returns the elapsed part of it."""
        local = now + skew
        start = (local // self.length) * self.length  # windows aligned on the gateway's clock
        if start != self.window_start:
            self.previous = self.count if start - self.window_start == self.length else 0
            self.window_start = start
            self.count = 0
        return local - start

    def used(self, now: float, mode: str, skew: float) -> float:
        """What counts against the limit at ``now`` (a float in weighted mode)."""
        if mode == "sliding":
            horizon = now - self.length
            hits = self.hits
            while hits and hits[0] <= horizon:
                hits.popleft()
            return len(hits)
        elapsed = self._roll(now, skew)
        if mode == "weighted":
            return self.previous * (1.0 - elapsed / self.length) + self.count
        return self.count

    def reset_in(self, now: float, left: int, mode: str, skew: float) -> float:
        """Clock seconds until this period has room for one more, once the ``left`` requests
        it still allows are spent (``RateLimit-Reset``)."""
        if mode == "sliding":
            if not self.hits:
                return self.length
            # enough of the oldest hits must leave that one more than ``left`` fits
            k = min(max(len(self.hits) - self.limit + left, 0), len(self.hits) - 1)
            return self.hits[k] + self.length - now
        end = self.window_start + self.length - skew - now
        if mode != "weighted":
            return end
        # once the ``left`` requests still allowed are spent too, the estimate must fall to
        # limit - 1: previous * (1 - (elapsed + x) / length) + count + left <= limit - 1 in
        # this window, or (count + left) * (1 - x' / length) <= limit - 1 in the next
        full, length = self.count + left, self.length
        if full <= self.limit - 1 and self.previous > 0:
            room = (self.limit - 1 - full) / self.previous
            return max(0.0, length * (1.0 - room) - (length - end))
        if full <= self.limit - 1:
            return end
        return end + length * (1.0 - (self.limit - 1) / full)

    def record(self, now: float, mode: str) -> None:
        if mode == "sliding":
            self.hits.append(now)
        else:
            self.count += 1


class RateLimiter:
    """Request limits per minute and per day, counted like Kong's ``rate-limiting`` plugin."""

    __slots__ = ("_periods", "count_refused", "fractional_reset", "mode", "skew")

    def __init__(
        self,
        *,
        minute: int,
        day: int,
        mode: Mode = "fixed",
        count_refused: bool = False,
        fractional_reset: bool = False,
        skew: float | None = None,
    ) -> None:
        if mode not in MODES:
            raise ConfigurationError(f"rate_limit_mode must be one of {MODES}, not {mode!r}")
        if minute < 1 or day < 1:
            raise ConfigurationError("limits must be at least 1")
        self._periods = (_Period("minute", MINUTE, minute), _Period("day", DAY, day))
        #: ``"fixed"``, ``"sliding"`` or ``"off"``
        self.mode: Mode = mode
        #: seconds the gateway's clock is ahead of ours (windows aligned on its clock)
        self.skew = float(skew) if skew is not None else (DEFAULT_SKEW if mode == "skewed" else 0.0)
        if not math.isfinite(self.skew):
            raise ConfigurationError(
                f"gateway skew must be a finite number of seconds, not {skew!r}"
            )
        #: whether refused requests count too (Kong's Redis policy)
        self.count_refused = count_refused
        #: send reset values as fractional seconds instead of Kong's integers
        self.fractional_reset = fractional_reset

    @property
    def limits(self) -> dict[str, int]:
        """The configured limit of each period."""
        return {p.name: p.limit for p in self._periods}

    def set_limits(self, *, minute: int | None = None, day: int | None = None) -> None:
        """Change the limits (a per-organization override); what was counted stays."""
        for period, limit in zip(self._periods, (minute, day), strict=True):
            if limit is not None:
                if limit < 1:
                    raise ConfigurationError("limits must be at least 1")
                period.limit = limit

    def spend(self, now: float, count: int, period: str = "day") -> None:
        """Count ``count`` requests at ``now`` in ``period`` only (``"minute"`` or ``"day"``),
        as another client of the same key would have: ``spend(now, 15_000)`` spends a day."""
        chosen = [p for p in self._periods if p.name == period]
        if not chosen or count < 0:
            raise ConfigurationError(f"spend: period is minute or day, count >= 0: {period!r}")
        p = chosen[0]
        p.used(now, self.mode, self.skew)  # move a fixed window to now first
        if self.mode == "sliding":
            p.hits.extend([now] * count)
        else:
            p.count += count

    def remaining(self, now: float) -> dict[str, int]:
        """What each period has left at ``now`` (no request is recorded)."""
        return {
            p.name: max(0, math.floor(p.limit - p.used(now, self.mode, self.skew)))
            for p in self._periods
        }

    def format_reset(self, seconds: float) -> str:
        """A reset value as the gateway sends it: whole seconds, at least 1 (or fractional)."""
        if self.fractional_reset:
            return f"{max(seconds, 0.001):.3f}"
        return str(max(1, math.ceil(seconds - 1e-9)))

    def decide(self, now: float, *, noise: int = 0) -> GateResult:
        """Judge one request arriving at ``now``, record it, and build its headers.

        ``noise`` is added to the displayed remaining counts (approximate node counters, a
        fault): enforcement stays exact.
        """
        mode, skew = self.mode, self.skew
        used = [p.used(now, mode, skew) for p in self._periods]
        stop: int | None = None
        if mode != "off":
            for i, p in enumerate(self._periods):
                if p.limit - used[i] < 1:
                    stop = i  # the last (longest) exhausted period wins, as in Kong
        allowed = stop is None
        if allowed or self.count_refused:
            for p in self._periods:
                p.record(now, mode)
            used = [p.used(now, mode, skew) for p in self._periods]
        headers: list[tuple[str, str]] = []
        best: tuple[int, float, int] | None = None  # (remaining, -length, index)
        lefts: list[int] = []
        for i, p in enumerate(self._periods):
            # the remaining count already includes this request (when it counted)
            left = max(0, math.floor(p.limit - used[i] + 1e-9))
            lefts.append(left)
            shown = min(p.limit, max(0, left + noise)) if noise else left
            headers.append((f"X-RateLimit-Limit-{p.title}", str(p.limit)))
            headers.append((f"X-RateLimit-Remaining-{p.title}", str(shown)))
            key = (left, -p.length, i)
            if best is None or key < best:
                best = key
        assert best is not None
        chosen = self._periods[best[2]]
        counting = "fixed" if mode in ("off", "skewed") else mode
        reset = chosen.reset_in(now, lefts[best[2]], counting, skew)
        shown_left = headers[2 * best[2] + 1][1]
        reset_text = self.format_reset(reset)
        headers.append(("RateLimit-Limit", str(chosen.limit)))
        headers.append(("RateLimit-Remaining", shown_left))
        headers.append(("RateLimit-Reset", reset_text))
        if not allowed:
            headers.append(("Retry-After", reset_text))
        return GateResult(allowed, headers, reset, chosen.name)


class ObjectLimiter:
    """Per-object daily limits, counted like Kong's ``response-ratelimiting`` plugin."""

    __slots__ = ("_day", "_used", "limits")

    def __init__(self, limits: Mapping[str, int] | None = None) -> None:
        #: the daily limit of each object name (``{"hotspots": 10}``)
        self.limits = dict(limits or {})
        for name, value in self.limits.items():
            if value < 0 or not name.isidentifier():
                raise ConfigurationError(f"bad object limit {name!r}={value!r}")
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
