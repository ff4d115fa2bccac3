"""Exact sliding-window logs: the sans-I/O arithmetic under the scheduler (no asyncio here).

A window keeps the times of its last ``count`` admissions. A new admission at ``t`` is
allowed when the oldest of them (the ``count``-th most recent) is at or before
``t - span``. Then no half-open interval of length ``span`` ever holds more than ``count``
admissions, so neither does any sliding window of the period nor any clock-aligned fixed
window (DESIGN "Rate limits" 1), while a burst of ``count`` at once is still allowed (2).
Older admissions can never matter again, so the log is a ``deque(maxlen=count)``: O(1)
per admission, whatever the limit. In *paced* mode admissions are also spaced
``span / count`` apart, which satisfies servers that weigh two fixed windows together.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Sequence

from asyncwifi.ratelimit._limits import WindowSpec

__all__ = ["WindowLog", "free_at", "project", "record", "try_admit"]


class WindowLog:
    """The admission log of one limit: at most ``count`` admissions in any ``span`` seconds."""

    __slots__ = ("_count", "_log", "name", "paced", "span")

    def __init__(self, name: str, count: int, span: float) -> None:
        #: the limit's name ("minute", "day")
        self.name = name
        #: the window length: the limit's period plus its margin
        self.span = span
        #: when true, admissions are also spaced at least ``span / count`` apart
        self.paced = False
        self._count = count
        self._log: deque[float] = deque(maxlen=count)

    @classmethod
    def from_spec(cls, spec: WindowSpec) -> WindowLog:
        return cls(spec.name, spec.count, spec.span)

    @property
    def count(self) -> int:
        """Admissions allowed in any window of ``span`` seconds."""
        return self._count

    @count.setter
    def count(self, value: int) -> None:
        self._count = value
        self._log = deque(self._log, maxlen=value)

    def free_at(self) -> float:
        """The earliest time the next admission is allowed by this window (may be past)."""
        log = self._log
        t = -math.inf
        if len(log) >= self._count:
            t = log[0] + self.span
        if self.paced and log:
            p = log[-1] + self.span / self._count
            if p > t:
                t = p
        return t

    def next_free(self, now: float) -> float:
        """The earliest time >= ``now`` at which one more admission is allowed."""
        t = self.free_at()
        return t if t > now else now

    def record(self, now: float) -> float:
        """Log an admission at ``now``; returns the time logged (never before the last one)."""
        log = self._log
        t = now if not log or log[-1] <= now else log[-1]
        log.append(t)
        return t

    def append(self, t: float) -> None:
        """Append ``t`` (the caller keeps the log sorted: see :func:`record`)."""
        self._log.append(t)

    def remove(self, t: float) -> bool:
        """Forget one admission logged at ``t`` (a refund: the request was never sent)."""
        try:
            self._log.remove(t)
        except ValueError:
            return False
        return True

    def used(self, now: float) -> int:
        """Admissions in the window ending at ``now`` (drops the ones that left it)."""
        log, edge = self._log, now - self.span
        while log and log[0] <= edge:
            log.popleft()
        return len(log)

    def newest(self) -> float | None:
        return self._log[-1] if self._log else None

    def times(self) -> Sequence[float]:
        """The logged times, oldest first (a live view: do not mutate)."""
        return self._log

    def extend(self, times: Iterable[float]) -> None:
        """Merge admissions made elsewhere (kept sorted)."""
        self._log = deque(sorted([*self._log, *times]), maxlen=self._count)

    def __repr__(self) -> str:
        mode = " paced" if self.paced else ""
        return f"<WindowLog {self.name} {len(self._log)}/{self._count} in {self.span:g}s{mode}>"


def free_at(logs: Sequence[WindowLog]) -> float:
    """The earliest time every window allows the next admission (may be in the past)."""
    t = -math.inf
    for w in logs:
        f = w.free_at()
        if f > t:
            t = f
    return t


def record(logs: Sequence[WindowLog], now: float) -> float:
    """Log an admission in every window unconditionally; returns the logged time.

    The same time goes into every log (never before any log's last entry, so that a clock
    stepping backwards keeps the logs sorted), which lets a refund find it again.
    """
    t = now
    for w in logs:
        last = w.newest()
        if last is not None and last > t:
            t = last
    for w in logs:
        w.append(t)
    return t


def try_admit(logs: Sequence[WindowLog], now: float) -> float | None:
    """Admit one at ``now`` if every window allows it: returns the logged time, else None."""
    if free_at(logs) > now:
        return None
    return record(logs, now)


def project(logs: Sequence[WindowLog], now: float, k: int) -> list[float]:
    """The earliest times of the next ``k`` admissions, if each went as early as allowed.

    The future admissions are simulated on top of each log without changing it.
    """
    out: list[float] = []
    for j in range(k):
        t = out[-1] if out else now
        for w in logs:
            log, count = w.times(), w.count
            n = len(log)
            idx = n + j - count
            if idx >= 0:
                ref = log[idx] if idx < n else out[idx - n]
                if ref + w.span > t:
                    t = ref + w.span
            if w.paced and (j or n):
                last = out[-1] if j else log[-1]
                p = last + w.span / count
                if p > t:
                    t = p
        out.append(t)
    return out
