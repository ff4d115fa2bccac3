"""Objects are a quota too (spec §8): the objects exchanged per kind in a UTC day and month,
the month's allowance, and the rule that holds requests back once it is spent.

spec §8: the subscription's volume is counted in *objects*, every record created, returned,
edited or deleted through the API or webhooks: 2,000 a month per access point (Splash) or
10 a month per contact (Compass). Past the month's allowance, without an overage
subscription, the platform enforces a hard threshold on API volume the *next* month, so an
allowance is a budget to plan with, not a limit the server enforces at once.

The store counts objects beside the requests (``RateStore.add_objects``: in memory, or in
Redis shared by every process of a key); :class:`Volume` (sans-I/O) keeps what the store last
answered and tells the scheduler whether a request of a kind may still go. Months and days
are UTC calendar periods on the clock's time line: the month resets on the 1st at 00:00 UTC.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from asyncwifi._instant import period_end, utc_period
from asyncwifi.errors import ValidationError

__all__ = [
    "ALL",
    "COMPASS_PER_CONTACT",
    "KINDS",
    "SPLASH_PER_ACCESS_POINT",
    "WEBHOOKS",
    "Ledger",
    "ObjectCounts",
    "Volume",
    "allowance_of",
    "month_end",
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


class Ledger:
    """Objects per kind in the current UTC day and month, in this process (``MemoryStore``,
    and ``RedisStore`` while Redis is unreachable); a new period starts from nothing."""

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts: ObjectCounts | None = None

    def add(self, now: float, kind: str, count: int) -> ObjectCounts:
        counts = self.read(now)
        self._counts = counts.plus(counts.month, counts.day, {kind: count})
        return self._counts

    def read(self, now: float) -> ObjectCounts:
        counts = self._counts
        self._counts = ObjectCounts.empty(now) if counts is None else counts.at(now)
        return self._counts


class Volume:
    """The month's allowance against what the store last said was exchanged (sans-I/O)."""

    __slots__ = ("allowance", "counts", "spent")

    def __init__(self, allowance: Mapping[str, int]) -> None:
        self.allowance = dict(allowance)
        self.counts: ObjectCounts | None = None
        #: whether some allowance was reached (the scheduler's hot path tests this alone)
        self.spent = False

    def note(self, counts: ObjectCounts) -> None:
        """What the store answered (after an addition or a read)."""
        self.counts = counts
        self.spent = any(counts.used(k) >= n for k, n in self.allowance.items())

    def gate(self, now: float, kind: str) -> str | None:
        """The allowance (``"all"`` or ``kind``) that holds back a request for objects of
        ``kind`` at ``now``, or None. A past month's counts hold nothing back."""
        if not self.spent or self.counts is None or kind not in KINDS:
            return None
        counts = self.counts.at(now)
        if counts is not self.counts:
            self.note(counts)  # a new month (or day): what was spent is behind us
        for name in (ALL, kind):
            if name in self.allowance and counts.used(name) >= self.allowance[name]:
                return name
        return None

    def describe(self, name: str) -> str:
        """The allowance ``name`` in words, for errors and logs."""
        which = "every kind of object" if name == ALL else name
        used = self.counts.used(name) if self.counts is not None else 0
        return (
            f"the month's object allowance ({self.allowance.get(name, 0):,} for {which}; "
            f"{used:,} exchanged)"
        )
