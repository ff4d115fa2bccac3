"""Objects are a quota too (spec §8): the objects exchanged per kind in a UTC day and month,
the month's allowance, and the rule that holds requests back once it is spent.

spec §8: the subscription's volume is counted in *objects*, every record created, returned,
edited or deleted through the API or webhooks: 2,000 a month per access point (Splash) or
10 a month per contact (Compass). Past the month's allowance, without an overage
subscription, the platform enforces a hard threshold on API volume the *next* month, so an
allowance is a budget to plan with, not a limit the server enforces at once.

The store counts objects beside the requests (``RateStore.add_objects``: in memory, or in
Redis shared by every process of a key) and *reserves* them before a request is sent
(:func:`grant`: what is left of the allowance, less what other requests in flight hold; the
gate that waits or raises is ``_reserve``); :class:`Volume` (sans-I/O) keeps what the store
last answered. Months and days are UTC calendar periods on the clock's time line: the month
resets on the 1st at 00:00 UTC.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from asyncwifi._instant import period_end, utc_period
from asyncwifi.errors import ValidationError

__all__ = [
    "ALL",
    "COMPASS_PER_CONTACT",
    "KINDS",
    "SPLASH_PER_ACCESS_POINT",
    "WEBHOOKS",
    "Grant",
    "Holds",
    "Ledger",
    "ObjectCounts",
    "Volume",
    "allowance_of",
    "grant",
    "month_end",
    "room",
]

#: a UTC calendar day, in clock seconds (no leap second on the epoch's time line)
DAY_SECONDS = 86_400.0
#: spec §8: the subscription volumes, objects a month per access point and per contact
SPLASH_PER_ACCESS_POINT = 2_000
COMPASS_PER_CONTACT = 10
#: the allowance of every kind together (the subscription's volume is one number)
ALL = "all"
#: deliveries a webhook receiver accepted: each is an object (spec §8: "via API or webhooks")
WEBHOOKS = "webhooks"
#: the kinds of object the SDK exchanges (the limiter's request tags that carry objects,
#: and the webhook receiver's deliveries)
KINDS = ("events", "contacts", "hotspots", "segments", WEBHOOKS)

#: an allowance in words: a number (grouped with "," or "_", at most 30 characters: a
#: longer one is no subscription's, and int() refuses more than 4,300 digits) and a unit
_TERMS = re.compile(
    r"^\s*(?P<n>[0-9][0-9_,]{0,29})\s*(?P<unit>(access[ -]?points?|aps?|contacts?)?)\s*$", re.I
)


def month_end(t: float) -> float:
    """When the UTC month holding ``t`` ends: the 1st of the next month at 00:00 UTC."""
    return period_end(t, "month")


def _count(value: object, what: str) -> int:
    """One allowance figure: an ``int`` >= 1, or text in the subscription's terms."""
    if isinstance(value, str):
        m = _TERMS.match(value)
        if m is None:
            raise ValidationError(
                f"{what}: {value!r} is not an allowance; give a number of objects a month "
                "(20000), access points (10 access points: 2,000 each) or contacts "
                "(2000 contacts: 10 each)"
            )
        n = int(m["n"].replace("_", "").replace(",", ""))
        unit = m["unit"].lower()
        if unit.startswith(("access", "ap")):
            n *= SPLASH_PER_ACCESS_POINT
        elif unit.startswith("contact"):
            n *= COMPASS_PER_CONTACT
        value = n
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(
            f"{what} must be a whole number of objects >= 1 (or its subscription terms), "
            f"got {value!r}"
        )
    return value


def allowance_of(value: object, what: str = "Limits.month") -> Mapping[str, int]:
    """The month's allowance, checked (``Limits.month``): ``None`` (none known), a number of
    objects of every kind together, text in the subscription's terms (``"10 access points"``:
    x 2,000; ``"2000 contacts"``: x 10), or a mapping of kind (or ``"all"``) to either.
    ``what`` names the value in an error as its giver wrote it (``--allowance``, a file's
    field)."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        out: dict[str, int] = {}
        for kind, figure in value.items():
            if not isinstance(kind, str) or kind not in (ALL, *KINDS):
                raise ValidationError(
                    f"{what}: {kind!r} is not a kind of object; use {ALL!r} or one of "
                    f"{', '.join(KINDS)}"
                )
            out[kind] = _count(figure, f"{what}[{kind!r}]")
        return out
    return {ALL: _count(value, what)}


@dataclass(frozen=True, slots=True)
class ObjectCounts:
    """Objects exchanged per kind in UTC ``month`` and UTC ``day`` (every user's, with a
    shared store). Build them with :meth:`of` (or :meth:`empty`): they then know the clock
    times their day spans, and :meth:`at` costs nothing within it (a count per response)."""

    month: str
    day: str
    this_month: Mapping[str, int] = field(default_factory=dict)
    today: Mapping[str, int] = field(default_factory=dict)
    #: the clock times [start, end) of UTC ``day`` (unknown: empty, so ``at`` computes)
    span: tuple[float, float] = field(default=(math.inf, -math.inf), compare=False, repr=False)

    @classmethod
    def of(
        cls,
        now: float,
        this_month: Mapping[str, int] | None = None,
        today: Mapping[str, int] | None = None,
    ) -> ObjectCounts:
        """The counts of the UTC month and day holding ``now``."""
        end = period_end(now, "day")
        month, day = utc_period(now, "month"), utc_period(now, "day")
        return cls(month, day, this_month or {}, today or {}, (end - DAY_SECONDS, end))

    @classmethod
    def empty(cls, now: float) -> ObjectCounts:
        return cls.of(now)

    def at(self, now: float) -> ObjectCounts:
        """These counts as of ``now``: a period that has ended counts nothing."""
        if self.span[0] <= now < self.span[1]:
            return self
        fresh = ObjectCounts.of(now)
        if (fresh.month, fresh.day) == (self.month, self.day):
            return replace(self, span=fresh.span)
        return ObjectCounts.of(
            now,
            self.this_month if fresh.month == self.month else None,
            self.today if fresh.day == self.day else None,
        )

    def plus(self, month: str, day: str, adds: Mapping[str, int]) -> ObjectCounts:
        """These counts with ``adds`` (per kind) made in UTC ``month`` and ``day``: what falls
        in another month (or day) changes nothing here."""
        if month != self.month or not adds:
            return self
        today = _added(self.today, adds) if day == self.day else self.today
        return ObjectCounts(self.month, self.day, _added(self.this_month, adds), today, self.span)

    def used(self, kind: str = ALL, *, period: str = "month") -> int:
        """Objects of ``kind`` (``"all"``: every kind) this month (or ``period="day"``)."""
        counts = self.this_month if period == "month" else self.today
        return sum(counts.values()) if kind == ALL else counts.get(kind, 0)


def _added(counts: Mapping[str, int], adds: Mapping[str, int]) -> dict[str, int]:
    out = dict(counts)
    for kind, n in adds.items():
        out[kind] = out.get(kind, 0) + n
    return out


class Grant(NamedTuple):
    """A store's answer to a reservation: ``size`` objects held under ``ticket`` (0 and
    None: none), ``free``: what the allowance leaves uncounted (held ones included), and
    ``name``: the allowance (``"all"`` or the kind) that leaves the least."""

    ticket: object
    size: int
    free: int
    name: str


def room(
    allowance: Mapping[str, int], counts: ObjectCounts, held: Mapping[str, int], kind: str
) -> tuple[int, int, str]:
    """What the month's ``allowance`` leaves for objects of ``kind``: not held by another
    reservation (``held``, per kind), not counted yet, and the allowance that leaves least."""
    avail, free, name = _BIG, _BIG, ALL
    for which in (ALL, kind):
        if which in allowance:
            used = counts.used(which)
            hold = sum(held.values()) if which == ALL else held.get(which, 0)
            left = allowance[which] - used
            if left - hold < avail:
                avail, name = left - hold, which
            free = min(free, left)
    return max(0, avail), max(0, free), name


def grant(
    allowance: Mapping[str, int],
    counts: ObjectCounts,
    held: Mapping[str, int],
    kind: str,
    want: int,
    least: int,
) -> tuple[int, int, str]:
    """How many objects of ``want`` a reservation of ``kind`` gets (0: fewer than ``least``
    are left), what is left uncounted, and the allowance that binds: the one rule the
    stores decide by (``RedisStore``'s script mirrors it)."""
    avail, free, name = room(allowance, counts, held, kind)
    return (min(want, avail) if avail >= least else 0), free, name


#: more than any allowance (a kind no allowance names leaves this)
_BIG = 1 << 62


class Holds:
    """Objects reserved and not settled yet, in this process: per ticket and per kind."""

    __slots__ = ("_numbers", "_tickets", "by_kind")

    def __init__(self) -> None:
        self._tickets: dict[int, tuple[str, int]] = {}
        self.by_kind: dict[str, int] = {}
        self._numbers = itertools.count(1)

    def add(self, kind: str, size: int) -> int:
        ticket = next(self._numbers)
        self._tickets[ticket] = (kind, size)
        self.by_kind[kind] = self.by_kind.get(kind, 0) + size
        return ticket

    def drop(self, ticket: object) -> None:
        """End a hold (settled or released); again: no effect."""
        got = self._tickets.pop(ticket, None) if isinstance(ticket, int) else None
        if got is not None:
            kind, size = got
            left = self.by_kind[kind] - size
            if left:
                self.by_kind[kind] = left
            else:
                del self.by_kind[kind]


class Ledger:
    """Objects per kind in the current UTC day and month, in this process (``MemoryStore``,
    and ``RedisStore`` while Redis is unreachable), and the reservations not yet settled
    (``holds``); a new period starts from nothing."""

    __slots__ = ("_counts", "holds")

    def __init__(self) -> None:
        self._counts: ObjectCounts | None = None
        self.holds = Holds()

    def add(self, now: float, kind: str, count: int) -> ObjectCounts:
        counts = self.read(now)
        self._counts = counts.plus(counts.month, counts.day, {kind: count})
        return self._counts

    def read(self, now: float) -> ObjectCounts:
        counts = self._counts
        self._counts = ObjectCounts.empty(now) if counts is None else counts.at(now)
        return self._counts

    def reserve(
        self,
        counts: ObjectCounts,
        kind: str,
        want: int,
        least: int,
        allowance: Mapping[str, int],
    ) -> Grant:
        """Hold up to ``want`` objects of ``kind`` (at least ``least``) against ``counts``
        and the holds of this process: what :func:`grant` gives."""
        size, free, name = grant(allowance, counts, self.holds.by_kind, kind, want, least)
        return Grant(self.holds.add(kind, size) if size else None, size, free, name)


class Volume:
    """The month's allowance against what the store last said was exchanged (sans-I/O)."""

    __slots__ = ("allowance", "counts")

    def __init__(self, allowance: Mapping[str, int]) -> None:
        self.allowance = dict(allowance)
        self.counts: ObjectCounts | None = None

    def note(self, counts: ObjectCounts) -> None:
        """What the store answered (after an addition or a read)."""
        self.counts = counts

    def binds(self, kind: str) -> bool:
        """Whether an allowance holds back objects of ``kind``."""
        return kind in KINDS and (ALL in self.allowance or kind in self.allowance)

    def describe(self, name: str) -> str:
        """The allowance ``name`` in words, for errors and logs."""
        which = "every kind of object" if name == ALL else name
        used = self.counts.used(name) if self.counts is not None else 0
        return (
            f"the month's object allowance ({self.allowance.get(name, 0):,} for {which}; "
            f"{used:,} exchanged)"
        )
