"""Parse the gateway's rate-limit headers, tolerantly (gateway.md, spec §8).

``X-RateLimit-Limit-<Period>`` / ``X-RateLimit-Remaining-<Period>`` per counted period,
``X-RateLimit-(Limit|Remaining)-<Object>-Day`` per object, ``RateLimit-Limit``,
``RateLimit-Remaining`` and ``RateLimit-Reset`` for the most constrained period, and
``Retry-After`` on a 429. Names are matched case-insensitively; a value that is not a
number is ignored (never an error): a response is evidence, not a contract. When a header
is repeated, the conservative reading wins (the lowest remaining, the longest wait).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

__all__ = ["PERIODS", "ObjectCounts", "RateLimitHeaders"]

#: the period names of the gateway's counters, and their length in seconds
PERIODS: dict[str, float] = {
    "second": 1.0,
    "minute": 60.0,
    "hour": 3_600.0,
    "day": 86_400.0,
    "month": 2_592_000.0,
    "year": 31_536_000.0,
}

_PREFIX = "x-ratelimit-"
#: first letters of the headers read here (X-RateLimit-*, RateLimit-*, Retry-After)
_FIRST = frozenset("xXrR \t")


def _number(raw: str) -> float | None:
    """The leading number of a header value ("60", "60, 60;w=60", " 7 "), or None."""
    token = raw.strip().split(",", 1)[0].split(";", 1)[0].strip()
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _count(raw: str) -> int | None:
    """A non-negative count; negative values read as 0 (the conservative reading)."""
    value = _number(raw)
    return None if value is None else max(0, int(value))


def _seconds(raw: str) -> float | None:
    value = _number(raw)
    return None if value is None or value < 0 else value


def _keep(
    old: float | None, new: float | None, pick: Callable[[float, float], float]
) -> float | None:
    """Of a repeated header's readings, the conservative one (``pick`` is min or max)."""
    return old if new is None else new if old is None else pick(old, new)


def _http_date(raw: str) -> float | None:
    try:
        parsed = parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed.tzinfo is None:
        return None
    stamp = parsed.timestamp()
    return stamp if math.isfinite(stamp) else None


@dataclass(frozen=True, slots=True)
class ObjectCounts:
    """A per-object daily quota as the gateway reported it (either figure may be missing)."""

    limit: int | None = None
    remaining: int | None = None


@dataclass(frozen=True, slots=True)
class RateLimitHeaders:
    """What one response said about the rate limits; every figure is optional.

    ``limits`` and ``remaining`` are keyed by lower-case period name (``"minute"``,
    ``"day"``); ``objects`` by lower-case object name (``"hotspots"``) for the day period.
    ``retry_after`` is a delay in seconds, ``retry_after_at`` an absolute epoch time (when
    ``Retry-After`` was an HTTP date); ``reset`` is ``RateLimit-Reset`` in seconds.
    """

    limits: Mapping[str, int] = field(default_factory=dict)
    remaining: Mapping[str, int] = field(default_factory=dict)
    objects: Mapping[str, ObjectCounts] = field(default_factory=dict)
    limit: int | None = None
    remaining_any: int | None = None
    reset: float | None = None
    retry_after: float | None = None
    retry_after_at: float | None = None

    @classmethod
    def from_headers(
        cls, headers: Mapping[str, str] | Iterable[tuple[str, str]] | None
    ) -> RateLimitHeaders:
        """Read a response's headers (a dict in any case, or aiohttp's CIMultiDictProxy)."""
        if headers is None:
            return _EMPTY
        periods: dict[str, dict[str, int]] = {"limit": {}, "remaining": {}}
        objs: dict[str, dict[str, int]] = {"limit": {}, "remaining": {}}
        one: dict[str, float | None] = dict.fromkeys(("limit", "remaining", "reset", "after"))
        after_at = None
        for key, value in headers.items() if isinstance(headers, Mapping) else headers:
            # most of a response's headers (Content-*, Date, Server, Via, Connection) are
            # passed over on their first letter: this runs once per response
            if not isinstance(key, str) or key[:1] not in _FIRST or not isinstance(value, str):
                continue
            lk = key.strip().lower()
            if lk.startswith(_PREFIX):
                kind, _, tail = lk[len(_PREFIX) :].partition("-")
                name, _, period = tail.rpartition("-")
                n = _count(value)
                if kind not in periods or n is None or period not in PERIODS:
                    continue
                # spec §8: X-Ratelimit-(Limit|Remaining)-Minute / -Day, and -<object>-Day
                into = periods[kind] if not name else objs[kind] if period == "day" else None
                if into is not None:
                    key_ = name or period
                    into[key_] = min(into.get(key_, n), n)
            elif lk in ("ratelimit-limit", "ratelimit-remaining"):
                k = lk[10:]
                one[k] = _keep(one[k], _count(value), min)
            elif lk == "ratelimit-reset":
                one["reset"] = _keep(one["reset"], _seconds(value), max)
            elif lk == "retry-after":
                delay = _seconds(value)
                if delay is not None:
                    one["after"] = _keep(one["after"], delay, max)
                else:
                    after_at = _keep(after_at, _http_date(value), max)
        if not any(periods.values()) and not any(objs.values()) and after_at is None:  # noqa: SIM102
            if all(v is None for v in one.values()):
                return _EMPTY
        names = sorted(objs["limit"].keys() | objs["remaining"].keys())
        limit, remaining = one["limit"], one["remaining"]
        return cls(
            limits=periods["limit"],
            remaining=periods["remaining"],
            objects={
                n: ObjectCounts(objs["limit"].get(n), objs["remaining"].get(n)) for n in names
            },
            limit=None if limit is None else int(limit),
            remaining_any=None if remaining is None else int(remaining),
            reset=one["reset"],
            retry_after=one["after"],
            retry_after_at=after_at,
        )

    @property
    def empty(self) -> bool:
        """True when the response carried no rate-limit information at all."""
        return self is _EMPTY or self == _EMPTY

    def delay(self, now: float) -> float | None:
        """The wait the server named, in seconds from ``now``: Retry-After, else RateLimit-Reset."""
        if self.retry_after is not None:
            return self.retry_after
        if self.retry_after_at is not None:
            return max(0.0, self.retry_after_at - now)
        return self.reset

    def reset_for(self, period: str) -> float | None:
        """``RateLimit-Reset`` if it describes ``period`` (it describes the most constrained one).

        It does when ``RateLimit-Limit`` equals that period's limit and no other period shares
        the figure, or (without ``RateLimit-Limit``) when that period alone has nothing left.
        """
        if self.reset is None:
            return None
        if self.limit is not None:
            same = [p for p, v in self.limits.items() if v == self.limit]
            return self.reset if same == [period] else None
        spent = [p for p, v in self.remaining.items() if v == 0]
        return self.reset if spent == [period] else None

    def spent_periods(self) -> list[str]:
        """Periods the server reported with nothing left, shortest first."""
        return sorted((p for p, v in self.remaining.items() if v <= 0), key=PERIODS.__getitem__)

    def spent_objects(self) -> list[str]:
        """Objects the server reported with nothing left today."""
        return [n for n, c in self.objects.items() if c.remaining is not None and c.remaining <= 0]


_EMPTY = RateLimitHeaders()
