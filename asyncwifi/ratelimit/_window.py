"""Exact sliding-window logs: the sans-I/O arithmetic under the scheduler (no asyncio here).

A window keeps the times of its last ``count`` admissions. A new admission at ``t`` is
allowed when the oldest of them (the ``count``-th most recent) is at or before
``t - span``. Then no half-open interval of length ``span`` ever holds more than ``count``
admissions, so neither does any sliding window of the period nor any clock-aligned fixed
window (DESIGN "Rate limits" 1), while a burst of ``count`` at once is still allowed (2).
Older admissions can never matter again, so the log is a ``deque(maxlen=count)``: O(1)
per admission, whatever the limit. In *paced* mode admissions are also spaced
``span / count`` apart, which satisfies servers that weigh two fixed windows together.

The rule lives in one place, :meth:`WindowLog.bound`; :class:`Windows` (the logs of every
limit of a store, admitted together) applies it to the logs as they are (``try_admit``)
and to the admissions still to come (``project``). The Lua script of ``RedisStore``
mirrors it, and a test holds the two to the same decisions.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Iterator, Sequence

from asyncwifi.ratelimit._limits import WindowSpec

__all__ = ["WindowLog", "Windows"]


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

    def bound(self, oldest: float | None, last: float | None) -> float:
        """The window rule: the earliest next admission, given the admission ``count`` back
        (None if fewer were made) and the latest one (for paced mode)."""
        t = -math.inf if oldest is None else oldest + self.span
        if self.paced and last is not None:
            p = last + self.span / self._count
            if p > t:
                t = p
        return t

    def free_at(self) -> float:
        """The earliest time the next admission is allowed by this window (may be past)."""
        log = self._log
        if not log:
            return -math.inf
        return self.bound(log[0] if len(log) >= self._count else None, log[-1])

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


class Windows:
    """Every limit's log of one store, admitted together: an admission goes into every log
    at one time (never before any log's last entry, so a clock stepping back keeps the logs
    sorted and a refund finds the entry again). ``free`` caches the earliest next admission.
    """

    __slots__ = ("_last", "free", "logs")

    def __init__(self, logs: Iterable[WindowLog] = ()) -> None:
        self.logs: list[WindowLog] = list(logs)
        #: the earliest time every window allows the next admission (may be in the past)
        self.free = -math.inf
        self._last = -math.inf
        self.refresh()

    @classmethod
    def from_specs(cls, specs: Iterable[WindowSpec]) -> Windows:
        return cls(WindowLog.from_spec(s) for s in specs)

    def __iter__(self) -> Iterator[WindowLog]:
        return iter(self.logs)

    def get(self, name: str) -> WindowLog:
        for w in self.logs:
            if w.name == name:
                return w
        raise KeyError(name)

    def refresh(self) -> None:
        """Recompute ``free`` (after a count, a mode or a log changed)."""
        self.free = max((w.free_at() for w in self.logs), default=-math.inf)
        self._last = max((t for w in self.logs if (t := w.newest()) is not None), default=-math.inf)

    def try_admit(self, now: float) -> float | None:
        """Admit one at ``now`` if every window allows it: returns the logged time, else None."""
        if now < self.free:
            return None
        return self.record(now)

    def record(self, now: float) -> float:
        """Log an admission in every window unconditionally; returns the logged time."""
        t = now if now >= self._last else self._last
        free = -math.inf
        for w in self.logs:
            w.append(t)
            f = w.free_at()
            if f > free:
                free = f
        self._last, self.free = t, free
        return t

    def remove(self, t: float) -> None:
        """Forget the admission logged at ``t`` in every window (a refund)."""
        for w in self.logs:
            w.remove(t)
        self.refresh()

    def next_free(self, now: float) -> tuple[float, str]:
        """The earliest time >= ``now`` every window allows one more, and the window that
        sets it ("" when it is ``now``)."""
        best, why = now, ""
        if now >= self.free:
            return best, why
        for w in self.logs:
            t = w.free_at()
            if t > best:
                best, why = t, w.name
        return best, why

    def project(self, now: float, k: int) -> list[float]:
        """The earliest times of the next ``k`` admissions, if each went as early as allowed.

        The rule is applied to the logs extended by the projected admissions themselves,
        without changing them.
        """
        out: list[float] = []
        for j in range(k):
            t = out[-1] if out else now
            for w in self.logs:
                log, n = w.times(), len(w.times())
                idx = n + j - w.count
                oldest = None if idx < 0 else (log[idx] if idx < n else out[idx - n])
                last = out[-1] if j else (log[-1] if n else None)
                b = w.bound(oldest, last)
                if b > t:
                    t = b
            out.append(t)
        return out

    def __repr__(self) -> str:
        return f"Windows({', '.join(map(repr, self.logs))})"
