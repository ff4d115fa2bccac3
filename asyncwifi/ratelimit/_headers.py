"""Parse the gateway's rate-limit headers tolerantly (gateway.md, spec §8): in any case, a
value that is not a number ignored (a response is evidence, not a contract), of a repeated
header the conservative reading (the lowest remaining, the longest wait)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

__all__ = ["PERIODS", "ObjectCounts", "RateLimitHeaders"]

#: the period names of the gateway's counters, and their length in seconds
PERIODS = {"second": 1.0, "minute": 60.0, "hour": 3_600.0, "day": 86_400.0}
PERIODS |= {"month": 2_592_000.0, "year": 31_536_000.0}

_FIRST = frozenset("xXrR \t")  # first letters of the headers read here
_KIND = {"limit": "limits", "remaining": "remaining"}  # X-RateLimit-<kind>-<period>: the field
_ONE = {"ratelimit-limit": "limit", "ratelimit-remaining": "remaining_any"}  # and their fields
_ONE |= {"ratelimit-reset": "reset", "retry-after": "retry_after"}
_WAITS = ("reset", "retry_after", "retry_after_at")  # of these the longest wins, else the lowest


def _number(raw: str) -> float | None:
    """The leading number of a header value ("60", "60, 60;w=60", " 7 "), or None."""
    try:
        value = float(raw.strip().split(",", 1)[0].split(";", 1)[0])
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _http_date(raw: str) -> float | None:
    try:
        parsed = parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return parsed.timestamp() if parsed.tzinfo is not None else None


@dataclass(frozen=True, slots=True)
class ObjectCounts:
    """A per-object daily quota as the gateway reported it (either figure may be missing)."""

    limit: int | None = None
    remaining: int | None = None


@dataclass(frozen=True, slots=True)
class RateLimitHeaders:
    """What one response said (every figure optional): ``limits`` and ``remaining`` by period
    (``"minute"``), ``objects`` by object (``"hotspots"``, the day's); ``retry_after`` in
    seconds or ``retry_after_at`` (an HTTP date, epoch); ``reset``: ``RateLimit-Reset``."""

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
        got: dict[tuple[str, str], float] = {}  # (field, period or object) -> the reading kept
        pairs = headers.items() if isinstance(headers, Mapping) else headers or ()
        for key, raw in pairs:
            # most headers (Content-*, Date, Server...) are passed over on their first letter
            if not isinstance(key, str) or key[:1] not in _FIRST or not isinstance(raw, str):
                continue
            lk = key.strip().lower()
            if lk.startswith(("x-ratelimit-limit-", "x-ratelimit-remaining-")):
                # spec §8: X-Ratelimit-(Limit|Remaining)-Minute / -Day, and -<object>-Day
                kind, _, tail = lk[12:].partition("-")
                name, _, period = tail.rpartition("-")
                if period not in PERIODS or (name and period != "day"):
                    continue
                entry = ("object_" + kind, name) if name else (_KIND[kind], period)
            elif lk in _ONE:
                entry = (_ONE[lk], "")
            else:
                continue
            value = _number(raw)
            if entry[0] == "retry_after" and (value is None or value < 0):
                entry, value = ("retry_after_at", ""), _http_date(raw)
            if value is None or (entry[0] == "reset" and value < 0):
                continue
            least = entry[0] not in _WAITS
            value = max(0, int(value)) if least else value  # a negative count reads as 0
            old = got.setdefault(entry, value)
            got[entry] = min(old, value) if least else max(old, value)
        if not got:
            return _EMPTY
        fields: dict[str, Any] = {}
        for (f, n), v in got.items():  # by period or object into a field's map, else the field
            fields[f] = (fields.get(f, {}) | {n: v}) if n else v
        lim, rem = fields.pop("object_limit", {}), fields.pop("object_remaining", {})
        objects = {n: ObjectCounts(lim.get(n), rem.get(n)) for n in sorted(lim.keys() | rem.keys())}
        return cls(objects=objects, **fields)

    @property
    def empty(self) -> bool:
        """True when the response carried no rate-limit information at all."""
        return self is _EMPTY or self == _EMPTY

    def delay(self, now: float) -> float | None:
        """The wait the server named, in seconds from ``now``: Retry-After, else RateLimit-Reset."""
        if self.retry_after is None and self.retry_after_at is not None:
            return max(0.0, self.retry_after_at - now)
        return self.reset if self.retry_after is None else self.retry_after

    def reset_for(self, period: str) -> float | None:
        """``RateLimit-Reset`` if it describes ``period`` (it describes the most constrained
        one): when ``RateLimit-Limit`` is that period's limit and no other period's, or
        (without ``RateLimit-Limit``) when that period alone has nothing left."""
        counts, want = (self.limits, self.limit) if self.limit is not None else (self.remaining, 0)
        return self.reset if [p for p, v in counts.items() if v == want] == [period] else None

    def spent_periods(self) -> list[str]:
        """Periods the server reported with nothing left, shortest first."""
        return sorted((p for p, v in self.remaining.items() if v <= 0), key=PERIODS.__getitem__)

    def spent_objects(self) -> list[str]:
        """Objects the server reported with nothing left today."""
        return [n for n, c in self.objects.items() if c.remaining is not None and c.remaining <= 0]


_EMPTY = RateLimitHeaders()
