"""Instants in the API's form: the one place that writes, reads and floors them.

The API is asked in ISO 8601 UTC with milliseconds (spec §4.5: ``dateStart``, ``dateEnd``) and
answers in looser forms: whole seconds, milliseconds, offsets, local times with no zone, bare
dates, epoch seconds (webhooks). observed.md adds local wall times written with a trailing
``Z`` although they are not UTC. Whatever in the SDK writes, reads or floors an instant calls
this module, so that one rule holds everywhere:

- :func:`format_instant` writes ``2026-01-01T00:00:00.000Z`` for any year from 1 to 9999
  (zero-padded; ``strftime``'s year is not, on glibc, below 1000), digits past the precision
  cut, never rounded up. ``timespec="seconds"`` is the rendering of a clock time in logs and
  messages (:func:`fmt_time`, any clock time), ``"microseconds"`` a key that sorts like
  time (backfill keys, SQLite columns).
- :func:`parse_timestamp` reads every form the API sends (:func:`read_instant`, one that
  must be there); :func:`utc_time` and :func:`utc_times` read a record's UTC time (``None``,
  never an error: a time guides cursors, and is not worth losing a record for);
  :func:`parse_local` reads a local wall time, its ``Z`` dropped: never UTC.
- :func:`parse_instant` reads an instant a person writes (a command line, ``fleet.toml``):
  an ISO 8601 date or date-time, no zone meaning UTC; :func:`parse_duration` a slice's
  size (:func:`read_duration`, at least a second).
- :func:`floor_ms` cuts an instant to the API's precision, :data:`MS`.
- :func:`utc_period` names the UTC calendar day or month holding a clock time, and
  :func:`period_end` says when it ends (spec §8: the object volume is counted by month).

Spans of time have one owner too: :func:`read_duration` reads the one form every setting
takes (``90``, ``90s``, ``1m30s``, ``1h``, ``2d``; a bare number is seconds), on the command
line and in the files alike; :func:`format_duration` writes it back (a default in a help
text); :func:`human_duration` says a span in a line for people.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from asyncwifi.errors import ValidationError

__all__ = [
    "DURATION_FORMS",
    "MS",
    "floor_ms",
    "fmt_time",
    "format_duration",
    "format_instant",
    "human_duration",
    "parse_day",
    "parse_duration",
    "parse_instant",
    "parse_local",
    "parse_timestamp",
    "period_end",
    "read_duration",
    "read_instant",
    "utc_period",
    "utc_time",
    "utc_times",
]

#: the API's precision: what a timestamp written to it can tell apart
MS = timedelta(milliseconds=1)

Timespec = Literal["seconds", "milliseconds", "microseconds"]


def _utc(moment: datetime | float) -> datetime:
    """An aware ``datetime`` in UTC (epoch seconds are UTC); a naive one is refused."""
    if not isinstance(moment, datetime):
        return datetime.fromtimestamp(moment, UTC)
    if moment.tzinfo is UTC:
        return moment
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{moment!r} has no time zone")
    return moment.astimezone(UTC)


def format_instant(moment: datetime | float, timespec: Timespec = "milliseconds") -> str:
    """``moment`` (an aware ``datetime``, or epoch seconds) as ISO 8601 UTC with a ``Z``:
    ``2026-01-01T00:00:00.000Z``, the API's form (see the module docstring for the others).
    A naive ``datetime`` is a ``ValueError``: its zone would be a guess."""
    return _utc(moment).replace(tzinfo=None).isoformat(timespec=timespec) + "Z"


def fmt_time(t: float) -> str:
    """A clock time as UTC text in whole seconds for logs and errors; one past the calendar
    (a virtual clock's far future) as the number itself."""
    try:
        return format_instant(t, "seconds")
    except (OverflowError, OSError, ValueError):
        return f"{t:.0f}"


def floor_ms(moment: datetime) -> datetime:
    """``moment`` in UTC, cut to the millisecond: the precision of every instant the API is
    asked with, so that what is compared is what the server was asked."""
    if moment.tzinfo is not UTC:
        moment = _utc(moment)
    micro = moment.microsecond
    return moment.replace(microsecond=micro - micro % 1000) if micro % 1000 else moment


def parse_timestamp(value: str | float | int | None, *, assume_utc: bool = True) -> datetime | None:
    """Parse one of the API's timestamps into a ``datetime``.

    The API mixes shapes: ISO 8601 UTC (``2024-03-01T10:00:00Z``), with milliseconds
    (``...00.123Z``), with an offset, local business times with no zone
    (``2024-03-01T11:00:00``), bare dates, and epoch seconds in webhooks. A value with no
    zone is taken as UTC when ``assume_utc`` (the default), else returned naive. A local
    wall time written with a ``Z`` (``createdAtLocal``, observed.md) is :func:`parse_local`'s.
    ``None`` or an empty string gives ``None``; anything else that does not parse raises
    ``ValueError``.
    """
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return datetime.fromtimestamp(float(value), tz=UTC)
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from None
    if parsed.tzinfo is None and assume_utc:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def read_instant(text: str) -> datetime:
    """:func:`parse_timestamp` of a text that must hold an instant: aware (no zone: UTC);
    ``ValueError`` if it is empty or not ISO 8601."""
    parsed = parse_timestamp(text)
    if parsed is None:
        raise ValueError("an empty timestamp")
    return parsed


def utc_time(text: str | None) -> datetime | None:
    """A record's UTC time as an aware ``datetime`` in UTC; ``None`` if absent or unparseable.

    A value without a zone is taken as UTC (``createdAt`` is documented as UTC).
    """
    try:
        parsed = parse_timestamp(text)
    except (TypeError, ValueError):
        return None
    return None if parsed is None else _as_utc(parsed)


def _as_utc(parsed: datetime) -> datetime | None:
    if parsed.tzinfo is UTC:
        return parsed
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # year 1 or 9999 pushed past the calendar by its offset
        return None


def utc_times(texts: Iterable[str | None]) -> list[datetime | None]:
    """:func:`utc_time` of each text, the usual ``...Z`` texts of a page in C-driven passes."""
    texts = list(texts)
    parse = datetime.fromisoformat
    try:
        times: list[datetime | None] = [None if t is None else parse(t) for t in texts]
    except (TypeError, ValueError):
        return [utc_time(t) for t in texts]
    for i, when in enumerate(times):
        if when is not None and when.tzinfo is not UTC:  # no zone (UTC), or an offset
            times[i] = _as_utc(when)
    return times


def parse_instant(text: str) -> datetime:
    """Parse a command-line instant: an ISO 8601 date or date-time; no zone means UTC.

    ``2026-01-01``, ``2026-01-01T10:30``, ``2026-01-01 10:30:00Z`` and
    ``2026-01-01T10:30:00+02:00`` are accepted. Raises ``ValueError`` with a message that
    says what is expected. The result is aware (UTC) and floored to the millisecond.
    """
    try:
        return floor_ms(read_instant(text))
    except ValueError:
        raise ValidationError(
            f"{text!r} is not an ISO 8601 date or date-time "
            "(e.g. 2026-01-01 or 2026-01-01T12:00:00Z)"
        ) from None


def parse_duration(text: str) -> timedelta:
    """Parse the size of a slice: :func:`read_duration`'s forms (``1d``, ``6h``, ``1h30m``,
    ``90``), at least one second; ``ValueError`` otherwise."""
    size = read_duration(text)
    if size < timedelta(seconds=1):
        raise ValidationError(f"{text!r}: a slice must last at least one second")
    return size


def parse_local(text: str | None) -> datetime | None:
    """A local wall time (``createdAtLocal``, ``startAtLocal``): a naive ``datetime`` in the
    location's zone, ``None`` if absent or unparseable. observed.md: such times are written
    with a trailing ``Z`` although they are not UTC; any zone written is dropped, so a local
    time is never compared with a UTC one by mistake."""
    try:
        parsed = parse_timestamp(text, assume_utc=False)
    except (TypeError, ValueError):
        return None
    return None if parsed is None else parsed.replace(tzinfo=None)


def parse_day(text: str) -> date:
    """A calendar day written ``YYYY-MM-DD`` (the hotspot filters); ``ValueError`` otherwise."""
    return date.fromisoformat(text)


def utc_period(t: float, period: Literal["day", "month"]) -> str:
    """The UTC calendar ``period`` holding clock time ``t``: ``"2026-11-27"`` or ``"2026-11"``."""
    d = _utc(t)
    return f"{d.year:04d}-{d.month:02d}" + (f"-{d.day:02d}" if period == "day" else "")


def period_end(t: float, period: Literal["day", "month"]) -> float:
    """When the UTC calendar ``period`` holding ``t`` ends (the next day's or the next
    month's 1st, at 00:00 UTC), in epoch seconds."""
    d = _utc(t)
    if period == "day":
        return datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp() + 86_400.0
    year, month = (d.year + 1, 1) if d.month == 12 else (d.year, d.month + 1)
    return datetime(year, month, 1, tzinfo=UTC).timestamp()


def human_duration(seconds: float | None) -> str:
    """A span for humans, the one format of every line the package prints: ``2 d 3 h``,
    ``4 h 05 min``, ``3 min 20 s``, ``12 s``, ``1 d``; ``?`` when unknown, ``never`` when
    infinite."""
    if seconds is None:
        return "?"
    if seconds == float("inf"):
        return "never"
    s = max(0, round(seconds))
    days, s = divmod(s, 86_400)
    hours, s = divmod(s, 3_600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes:02d} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min {s:02d} s" if s else f"{minutes} min"
    return f"{s} s"


#: the forms of a duration, as every message and help text says them
DURATION_FORMS = "90 (seconds), 90s, 1m30s, 1h, 2d"
_NUMBER = r"\d+(?:\.\d*)?|\.\d+"
_PARTS = re.compile(rf"(?:(?:{_NUMBER})[wdhms])+", re.IGNORECASE)
_PART = re.compile(rf"({_NUMBER})([wdhms])", re.IGNORECASE)
_UNIT_SECONDS = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1}


def read_duration(text: str) -> timedelta:
    """A span of time written ``90``, ``90s``, ``1m30s``, ``1h``, ``2d`` or ``1w`` (a bare
    number is seconds; parts may have decimals, ``1.5h``; spaces are ignored): the one
    form of every duration setting. ``ValidationError`` (a ``ValueError``) for anything
    else, a negative span included; zero is a span (whoever takes it says if it may be)."""
    compact = text.strip().replace(" ", "")
    if re.fullmatch(_NUMBER, compact):
        seconds = float(compact)
    elif _PARTS.fullmatch(compact):
        seconds = sum(float(n) * _UNIT_SECONDS[unit.lower()] for n, unit in _PART.findall(compact))
    else:
        raise ValidationError(f"{text!r} is not a duration (e.g. {DURATION_FORMS})")
    if not math.isfinite(seconds) or seconds > timedelta.max.total_seconds():
        raise ValidationError(f"{text!r} is too long a duration")
    return timedelta(seconds=seconds)


def format_duration(seconds: float) -> str:
    """``seconds`` in :func:`read_duration`'s form, the shortest that reads back the same:
    ``90`` -> ``1m30s``, ``86400`` -> ``1d``, ``0.5`` -> ``0.5s``, ``0`` -> ``0s``."""
    if seconds < 0 or not math.isfinite(seconds):
        raise ValueError(f"{seconds!r} is not a span of time")
    whole = int(seconds)
    if whole != seconds:  # a fraction of a second: seconds only, as written
        return f"{seconds:g}s"
    parts = []
    for unit in "dhms":
        count, whole = divmod(whole, _UNIT_SECONDS[unit])
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"
