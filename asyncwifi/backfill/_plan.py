"""The plan of a backfill: time slices, and what they will cost in requests, objects, time and
quota.

Sans-I/O: nothing here reads the time or touches a file. The job's range is half-open,
``[since, until)``, so that two runs ``--since A --until B`` and ``--since B --until C``
never overlap. spec §4.5: ``dateStart`` and ``dateEnd`` are both inclusive, so a slice
``[start, end)`` is asked for as ``dateStart=start`` and ``dateEnd=end - 1 ms``, formatted with
milliseconds: consecutive slices are disjoint and leave no gap at millisecond precision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from asyncwifi._instant import MS, floor_ms, format_instant
from asyncwifi.errors import ValidationError
from asyncwifi.ratelimit import Limits

__all__ = [
    "PlanEstimate",
    "Slice",
    "estimate",
    "even_slice_size",
    "plan_slices",
    "requests_time",
]


@dataclass(frozen=True, slots=True)
class Slice:
    """One piece of the job's range: events with ``start <= date < end``."""

    #: position in the plan, 0-based
    index: int
    #: inclusive start (UTC, millisecond precision)
    start: datetime
    #: exclusive end: the next slice's start, or the job's ``until``
    end: datetime

    @property
    def date_start(self) -> str:
        """The ``dateStart`` to ask for (spec §4.5: inclusive)."""
        return format_instant(self.start)

    @property
    def date_end(self) -> str:
        """The ``dateEnd`` to ask for: ``end - 1 ms`` (spec §4.5: ``dateEnd`` is inclusive)."""
        return format_instant(self.end - MS)


#: more slices than this is a mistake (a one-second slice over a year), not a plan
MAX_SLICES = 100_000


def even_slice_size(since: datetime, until: datetime, count: int) -> timedelta:
    """The slice size that cuts ``[since, until)`` into at most ``count`` slices: a few long
    time cursors (one per concurrent scroll) cost the fewest requests, since every slice
    ends with a page that is not full (the request floor: docs/design.md)."""
    if count < 1:
        raise ValidationError("count must be at least 1")
    span = until - since
    size = span / count
    return max(MS, size + (MS - size % MS if size % MS else timedelta(0)))


def plan_slices(since: datetime, until: datetime, size: timedelta) -> list[Slice]:
    """Split ``[since, until)`` into consecutive slices of ``size`` (the last may be shorter).

    Raises ``ValueError`` when the range is empty, a bound is naive, ``size`` is not
    positive, or the plan would have more than :data:`MAX_SLICES` slices.
    """
    if since.tzinfo is None or until.tzinfo is None:
        raise ValidationError("since and until must carry a time zone")
    if size <= timedelta(0):
        raise ValidationError("the slice size must be positive")
    start = floor_ms(since)
    stop = floor_ms(until)
    if start >= stop:
        raise ValidationError("since must be before until")
    if (stop - start) / size > MAX_SLICES:
        raise ValidationError(
            f"that makes more than {MAX_SLICES:,} slices; use a larger slice size"
        )
    slices: list[Slice] = []
    while start < stop:
        end = stop if stop - start <= size else start + size  # no overflow near 9999
        slices.append(Slice(len(slices), start, end))
        start = end
    return slices


@dataclass(frozen=True, slots=True)
class PlanEstimate:
    """What a plan is expected to cost. Every figure is an estimate from ``events_per_day``."""

    slices: int
    events: int
    #: data requests: ceil(events / page size) pages per slice (a short last page proves
    #: the end), plus one request proving it when a slice's last page is exactly full, or
    #: for a slice with no event (its empty first page)
    page_requests: int
    #: one login per token day (spec §5.4: a token lasts a day)
    logins: int
    #: seconds of sending at the minute limit alone (no day limit)
    seconds_at_rate: float
    #: how many days of the daily quota the requests fill
    days_of_quota: float
    #: seconds until the last request, counting the waits for the daily reset
    seconds_total: float

    @property
    def requests(self) -> int:
        """Every request the job should spend, logins included (spec §8: all requests count)."""
        return self.page_requests + self.logins

    @property
    def objects(self) -> int:
        """The objects the job should spend (spec §8: each record returned counts): every
        event of the plan read once; a slice's closing page returns no event beyond them
        (an empty one costs nothing), and a login returns no object."""
        return self.events


def requests_time(
    requests: int,
    *,
    minute_count: int,
    minute_period: float,
    day_count: int,
    day_period: float,
    day_remaining: int | None = None,
    day_reset_in: float | None = None,
) -> float:
    """Seconds needed to send ``requests`` at the limits, waiting for each daily reset.

    ``day_remaining`` is what is left of today's quota (a full day when unknown) and
    ``day_reset_in`` the seconds until it resets (a full period when unknown).
    """
    if requests <= 0:
        return 0.0
    rate = minute_count / minute_period
    left = day_count if day_remaining is None else max(0, day_remaining)
    reset_in = day_period if day_reset_in is None else max(0.0, day_reset_in)
    if requests <= left:
        return requests / rate
    # today's remainder, then whole days, then the last partial day
    seconds = reset_in
    rest = requests - left
    full_days, last = divmod(rest, day_count)
    if last == 0:
        full_days, last = full_days - 1, day_count
    return seconds + full_days * day_period + last / rate


def estimate(
    slices: list[Slice],
    *,
    events_per_day: float,
    page_size: int,
    limits: Limits | None = None,
) -> PlanEstimate:
    """Estimate a plan's cost assuming ``events_per_day`` events evenly spread over time,
    at ``limits`` (the documented ones by default: ``Limits()`` is where they are written).

    The API has no count endpoint for events (spec §4.5 shows none), so a dry run cannot
    learn the volume without spending quota: the assumption is the caller's, stated.
    """
    if page_size < 1:
        raise ValidationError("page_size must be at least 1")
    limits = limits or Limits()
    minute, day = limits.minute, limits.day
    if minute is None or day is None:
        raise ValidationError("an estimate needs the limits' minute and day")
    minute_count, minute_period = minute.count, minute.period
    day_count, day_period = day.count, day.period
    events = 0
    pages = 0
    for piece in slices:
        n = round(events_per_day * (piece.end - piece.start).total_seconds() / 86_400.0)
        events += n
        pages += n // page_size + 1  # full pages, then the short (or empty) one that ends it
    # a run that spans several days of quota needs a fresh token per day
    logins = max(1, math.ceil((pages + 1) / day_count))
    total = pages + logins
    return PlanEstimate(
        slices=len(slices),
        events=events,
        page_requests=pages,
        logins=logins,
        seconds_at_rate=total / (minute_count / minute_period),
        days_of_quota=total / day_count,
        seconds_total=requests_time(
            total,
            minute_count=minute_count,
            minute_period=minute_period,
            day_count=day_count,
            day_period=day_period,
        ),
    )
