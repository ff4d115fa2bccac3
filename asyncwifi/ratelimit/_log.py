"""Exact sliding-window logs: the sans-I/O arithmetic under the scheduler (no asyncio here).

One log of admission times (each with its tag) serves every window of a store. A window of
``count`` in any ``span`` admits at ``t`` when its ``count``-th most recent admission is at
or before ``t - span``: then no interval of ``span`` holds more than ``count``, sliding or
clock-aligned (DESIGN "Rate limits" 1), while a burst of ``count`` is allowed (2). *Paced*,
admissions are also ``span / count`` apart (for servers that weigh two fixed windows). The
rule is :func:`bound`; ``RedisStore``'s Lua script mirrors it (test_rl_lua_mirror.py).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import Counter, deque
from collections.abc import Sequence

from asyncwifi.ratelimit._limits import WindowSpec

__all__ = ["Log", "bound"]


def bound(specs: Sequence[WindowSpec], times: Sequence[float]) -> tuple[float, str]:
    """The window rule: the earliest next admission after ``times`` (sorted, oldest first)
    and the window that sets it ("" when nothing holds it back)."""
    t, why, n = -math.inf, "", len(times)
    for w in specs:
        if n >= w.count and times[n - w.count] + w.span > t:
            t, why = times[n - w.count] + w.span, w.name
        if w.paced and n and times[-1] + w.span / w.count > t:
            t, why = times[-1] + w.span / w.count, w.name
    return t, why


class Log:
    """The admissions of one store, oldest first, kept as long as the longest window needs.
    An admission is logged no earlier than the newest one, so a clock stepping back keeps
    the log sorted for refunds and bisection."""

    __slots__ = ("_keep", "specs", "tags", "times")

    def __init__(self, specs: Sequence[WindowSpec]) -> None:
        self.specs = list(specs)
        self.times: deque[float] = deque()
        self.tags: deque[str] = deque()
        self._keep = max((w.span for w in self.specs), default=0.0)

    def spec(self, name: str) -> WindowSpec:
        for w in self.specs:
            if w.name == name:
                return w
        raise KeyError(name)

    def configure(self, name: str, count: int | None, paced: bool | None) -> None:
        """Lower the count of window ``name`` (never raise it) or set its paced mode."""
        w = self.spec(name)
        w.count = w.count if count is None else max(1, min(w.count, count))
        w.paced = w.paced if paced is None else paced

    def record(self, now: float, tag: str) -> float:
        """Log an admission at ``now`` unconditionally; returns the time logged."""
        times = self.times
        if times and times[-1] > now:
            now = times[-1]
        times.append(now)
        self.tags.append(tag)
        edge = now - self._keep
        while times[0] <= edge and len(times) > 1:
            times.popleft()
            self.tags.popleft()
        return now

    def remove(self, t: float, tag: str) -> bool:
        """Forget one admission logged at ``t`` with ``tag`` (a refund: never sent)."""
        times, tags = self.times, self.tags
        for i in range(len(times) - 1, -1, -1):
            if times[i] < t:
                break
            if times[i] == t and tags[i] == tag:
                del times[i], tags[i]
                return True
        return False

    def used(self, now: float, span: float) -> int:
        """Admissions in the ``span`` seconds up to ``now`` (later ones included)."""
        return len(self.times) - bisect.bisect_right(self.times, now - span)

    def tally(self, now: float, span: float) -> dict[str, int]:
        """Admissions per tag in the ``span`` seconds up to ``now``."""
        start = len(self.times) - self.used(now, span)
        return dict(Counter(itertools.islice(self.tags, start, None)))

    def project(self, now: float, k: int) -> list[float]:
        """The earliest times of the next ``k`` admissions, if each went as early as allowed
        (the rule applied to the log extended by the projected admissions themselves)."""
        times = list(self.times)[-max((w.count for w in self.specs), default=1) :]
        out = [now]
        for _ in range(k):
            out.append(max(out[-1], bound(self.specs, times)[0]))
            times.append(max(out[-1], times[-1]) if times else out[-1])
        return out[1:]

    def __repr__(self) -> str:
        newest = self.times[-1] if self.times else 0.0
        shown = ", ".join(
            f"{w.name} {self.used(newest, w.span)}/{w.count} in {w.span:g}s"
            + (" paced" if w.paced else "")
            for w in self.specs
        )
        return f"<Log {shown}>"
