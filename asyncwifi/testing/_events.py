"""The event log, never held whole, served fast (spec §2.4, §4.5).

The seeded events are drawn block by block from the seed whenever they are read
(``_event_log``): a time, a type code and an owner (contact index) per event, and everything
else about an event (its id, its sub-object) derived from its index and the seed, so the
log's memory does not grow with its range and every read gives the same events. Indices only
grow: an event added later (the feed; a late one, its time before the newest event's: a visit
written when the guest leaves, an access point uploading after an outage) takes the next
index and is kept in arrays; queries merge it in time order (``_event_views``). The JSON of
each event is built lazily and served from a few cached chunks (``_event_bodies``).

Each event happens at a venue; venues span several time zones, so the API's default order
(``businessTime``: local wall time) differs from UTC order, and a client that trusts the
default order as a time cursor breaks. ``dateStart``/``dateEnd`` filter on the UTC time.
How a record is written (nested, flat without any time, or flat with the legacy ``date``)
is the store's ``shape`` (see ``_event_records``).
"""

from __future__ import annotations

import random
import threading
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import msgspec

from asyncwifi import _rules
from asyncwifi.errors import ConfigurationError
from asyncwifi.testing._event_bodies import EventBodies
from asyncwifi.testing._event_business import BusinessView
from asyncwifi.testing._event_draws import CODE_TABLE, draw_owners, poisson_times
from asyncwifi.testing._event_log import EventLog
from asyncwifi.testing._event_records import (
    EmailInfo,
    EventShape,
    Flat,
    Nested,
    Promo,
    Signup,
    SmsInfo,
    Survey,
    Visit,
    What,
    When,
    Where,
)
from asyncwifi.testing._event_views import MergeView, Selection, TypeView
from asyncwifi.testing._util import iso_z, mix

__all__ = ["EVENT_TYPES", "UNDOCUMENTED_TYPES", "EventStore", "Selection", "Venue"]

#: spec §4.5: the event type names the ``events`` filter accepts, in type-code order
EVENT_TYPES: tuple[str, ...] = _rules.EVENT_TYPES
#: types the data holds that no list documents (observed.md: the vendor's example shows
#: ``arriving``); served when no type filter is given, never matched by one
UNDOCUMENTED_TYPES: tuple[str, ...] = ("arriving",)
_ALL_TYPES = EVENT_TYPES + UNDOCUMENTED_TYPES
TYPE_CODES: dict[str, int] = {name: code for code, name in enumerate(_ALL_TYPES)}
#: where an event happens: (locationId, locationName, hotspotId, IANA time zone)
Venue = tuple[str, str, str, str]
_CAMPAIGNS = (
    ("Spring sale", "cmp-spring"),
    ("Loyalty welcome", "cmp-welcome"),
    ("Weekend brunch", "cmp-brunch"),
    ("Back to school", "cmp-school"),
    ("Win-back", "cmp-winback"),
)
_SOURCES = ("splash", "kiosk", "api", "dashboard")
_PROMOS = ("cta_click", "banner", "video")
_ANSWERS = ("Excellent", "Good", "Average", "Poor")


class EventStore:
    """All events of the simulated organization, in time order (see the module docstring)."""

    def __init__(
        self,
        *,
        seed: int,
        count: int,
        start: float,
        end: float,
        owners: Sequence[tuple[str, str, str]],
        customer_ids: Sequence[str] = (),
        organization: str = "",
        venues: Sequence[Venue] = (),
        shape: EventShape = "nested",
    ) -> None:
        if count < 0 or end < start:
            raise ConfigurationError("events must be >= 0 and events_end after events_start")
        if shape not in ("nested", "flat", "dated"):
            raise ConfigurationError(
                f"event_shape must be 'nested', 'flat' or 'dated', got {shape!r}"
            )
        self._contacts = list(owners) or [("", "", "")]
        self._venues = list(venues) or [("", "", "", "UTC")]
        #: the record shape served (see ``_event_records``)
        self.shape: EventShape = shape
        self._log = EventLog(
            seed=seed,
            count=count,
            start=start,
            end=end,
            contacts=self._contacts,
            venues=len(self._venues),
        )
        #: epoch seconds of each event (by index): ascending until an event is added late
        self.times = self._log.times
        #: the type code of each event (an index into ``EVENT_TYPES + UNDOCUMENTED_TYPES``)
        self.codes = self._log.codes
        #: the index of the contact each event belongs to
        self.owners = self._log.owners
        #: the venue (index into the venues) of each event
        self.venue = self._log.venue
        self.start = float(start)
        self.end = float(end)
        self._seed = seed
        #: how many appends drew events (each draws from its own seeded ``Random``)
        self.appends = 0
        self._customers = list(customer_ids)
        self._organization = organization
        self._salt = mix(seed, 0x1D) & 0xFFFFFF
        self._salt40 = self._salt << 40
        self._zones = [ZoneInfo(v[3]) for v in self._venues]
        self._wheres = [Where(v[0], v[1], v[2]) for v in self._venues]
        self._offsets: dict[tuple[int, int], int] = {}
        #: each event's JSON as served (``_event_bodies``)
        self.bodies = EventBodies(self._build, count)
        #: the appended events' indices in time order (ties in index order), their times
        self._added: array[int] = array("I")
        self._added_times: array[int] = array("q")

    def append(self, count: int, *, start: float, end: float) -> range:
        """Add ``count`` new events with times in ``[start, end]``; returns their indices.

        The new events take the next indices (so their ids are new, and no other event's
        changes). A ``start`` before the newest event's time makes them *late*: their
        times lie in the past, among events served before; queries serve them from now
        on, in time order (ties in index order). Times are whole seconds, as every
        event's, rounded down (an event added at 12:00:00.7 says 12:00:00). The new events
        are drawn like the others (Poisson times, weighted types, contacts and their
        venues), deterministic from the seed and the number of appends so far. Open
        scrolls keep their own selection of indices: an append does not change what they
        serve.
        """
        if count < 0 or end < start:
            raise ConfigurationError("append: count must be >= 0 and end not before start")
        n = len(self._log)
        if not count:
            return range(n, n)
        self.appends += 1
        rnd = random.Random(mix(self._seed, 0xE7E7, self.appends))
        times = poisson_times(rnd, count, float(start), float(end))
        codes = rnd.randbytes(count).translate(CODE_TABLE)
        self._log.append(times, codes, draw_owners(rnd, codes, self._contacts))
        self.bodies.grow(len(self._log))
        self.start = min(self.start, float(start))
        self.end = max(self.end, float(end))
        added, ordered = self._added, self._added_times
        if not ordered or times[0] >= ordered[-1]:  # in order: at the end
            added.extend(range(n, n + count))
            ordered.extend(times)
        else:  # a stable sort of two sorted runs: ties keep the index order
            every = sorted([*added, *range(n, n + count)], key=self._log.row_time)
            self._added = array("I", every)
            self._added_times = array("q", map(self._log.row_time, every))
        return range(n, len(self._log))

    def newest(self) -> int:
        """The newest event's time (epoch seconds); the log must not be empty."""
        log, added = self._log, self._added_times
        newest = log.row_time(log.base - 1) if log.base else added[-1]
        return max(newest, added[-1]) if added else newest

    def __len__(self) -> int:
        return len(self._log)

    # -- identity and content -------------------------------------------------------------

    def event_id(self, i: int) -> str:
        """The id of event ``i``: 24 hex digits, time-prefixed like an ObjectId, unique."""
        return "%024x" % ((self._log.row_time(i) & 0xFFFFFFFF) << 64 | self._salt40 | i)

    def _offset(self, venue: int, t: int) -> int:
        """The UTC offset (seconds) of ``venue``'s time zone at ``t``, cached by the hour."""
        hour = t // 3600
        offset = self._offsets.get((venue, hour))
        if offset is None:
            if len(self._offsets) > 50_000:  # a long range: keep the cache small
                self._offsets.clear()
            delta = datetime.fromtimestamp(hour * 3600, self._zones[venue]).utcoffset()
            offset = self._offsets[venue, hour] = int(delta.total_seconds()) if delta else 0
        return offset

    def _local(self, venue: int, t: int) -> str:
        """``t`` as local wall time (no zone) at ``venue``."""
        return iso_z(t + self._offset(venue, t))[:-1]

    def local_time(self, i: int) -> int:
        """Event ``i``'s local wall time at its venue, as epoch-like seconds (what the API's
        default ``sortBy=businessTime`` orders by; not UTC order across zones)."""
        t, _, _, v = self._log.row(i)
        return t + self._offset(v, t)

    def business_times(self) -> Sequence[int]:
        """Each event's :meth:`local_time` (a sequence read on demand, never held)."""
        return _LocalTimes(self)

    def _build(self, i: int) -> Flat | Nested:
        t, code, owner, v = self._log.row(i)
        ident = "%024x" % ((t & 0xFFFFFFFF) << 64 | self._salt40 | i)
        kind = _ALL_TYPES[code]
        ev: Flat | Nested
        if self.shape == "nested":
            customer = self._customers[owner] if owner < len(self._customers) else ""
            local = self._local(v, t) + "Z"  # observed.md: local time, written with a Z
            when = When(iso_z(t), local, self._venues[v][3])
            ev = Nested(self._organization, customer, What(kind, ident), self._wheres[v], when)
        else:
            ev = Flat(kind, ident, iso_z(t) if self.shape == "dated" else None)
        if code == 2 or code >= len(EVENT_TYPES):  # login, arriving: no sub-object
            return ev
        h = ((i ^ self._salt) * 0x9E3779B97F4A7C15 >> 24) & 0xFFFFFFFF  # cheap, stable
        if code == 0:  # visit: the event fires when the contact leaves
            duration = 300 + h % 7200
            begin = t - duration
            ev.visit = Visit(iso_z(begin), self._local(v, begin), self._venues[v][3], duration)
        elif code == 1:
            ev.signup = Signup(_SOURCES[h % len(_SOURCES)])
        elif 3 <= code <= 5:
            name, cid = _CAMPAIGNS[h % len(_CAMPAIGNS)]
            email = self._contacts[owner % len(self._contacts)][0]
            ev.email = EmailInfo(cid, f"com-{cid[4:]}-{h % 97:02d}", "email", name, email)
        elif code in (6, 7):
            name, cid = _CAMPAIGNS[h % len(_CAMPAIGNS)]
            _, phone, prefix = self._contacts[owner % len(self._contacts)]
            ev.sms = SmsInfo(cid, f"com-{cid[4:]}-{h % 97:02d}", "sms", name, phone, prefix)
        elif code == 8:
            name, cid = _CAMPAIGNS[h % len(_CAMPAIGNS)]
            ev.survey = Survey(
                cid,
                name,
                f"ans-{h % 100000:05d}",
                {"q1": "How was your visit?", "q2": "Would you come back?"},
                {"q1": _ANSWERS[h % 4], "q2": "yes" if h & 16 else "no"},
            )
        else:
            ev.promo = Promo(_PROMOS[h % len(_PROMOS)])
        return ev

    def warm(self, stop: threading.Event | None = None, *, hold: bool = False) -> None:
        """Encode the first events now (see ``EventBodies.warm``: ``hold`` encodes and
        keeps every event, for benchmarks); on a thread, ``stop`` ends it early."""
        self.bodies.warm(stop, hold=hold)

    def event_json(self, i: int) -> bytes:
        """The JSON bytes of event ``i``, as served."""
        return self.bodies.event_json(i)

    def record(self, i: int) -> dict[str, Any]:
        """Event ``i`` as a decoded dict (for tests)."""
        decoded: dict[str, Any] = msgspec.json.decode(self.event_json(i))
        return decoded

    def join(self, indices: Sequence[int]) -> bytes:
        """The events at ``indices`` as the inside of a JSON array (``{..},{..}``)."""
        return self.bodies.join(indices)

    # -- queries ---------------------------------------------------------------------------

    def bounds(self, start: float | None, end: float | None) -> tuple[int, int]:
        """The seeded events with ``start <= date <= end`` (spec §4.5): an index range."""
        log = self._log
        lo = 0 if start is None else log.first_at_or_after(start)
        hi = log.base if end is None else log.first_after(end)
        return lo, max(lo, hi)

    def select(
        self,
        start: float | None = None,
        end: float | None = None,
        types: Iterable[str] | None = None,
        owner: int | None = None,
    ) -> Selection:
        """The indices of matching events in ascending time order (ties in index order)."""
        log = self._log
        lo, hi = self.bounds(start, end)
        codes = None if types is None else frozenset(TYPE_CODES[t] for t in types)
        base: range | array[int] | TypeView = range(lo, hi)
        if owner is not None:
            base = array("I")
            for first, block, a, b in log.spans(lo, hi):
                found, kinds = block.owners, block.codes
                base.extend(
                    first + r
                    for r in range(a, b)
                    if found[r] == owner and (codes is None or kinds[r] in codes)
                )
        elif codes is not None and lo < hi:
            base = TypeView(log, lo, hi, codes)
        ordered = self._added_times
        a = 0 if start is None else bisect_left(ordered, start)
        b = len(ordered) if end is None else bisect_right(ordered, end)
        added = self._added[a:b]
        if owner is not None or codes is not None:
            added = array(
                "I",
                [
                    i
                    for i in added
                    if (owner is None or log.row(i)[2] == owner)
                    and (codes is None or log.row(i)[1] in codes)
                ],
            )
        if not added:
            return base
        if not len(base):
            return added
        if isinstance(base, array):  # one contact's events: few, merged here
            merged = sorted([*base, *added], key=lambda i: (log.row_time(i), i))
            return array("I", merged)
        times = [log.row_time(i) for i in added]
        if isinstance(base, TypeView):
            view = base

            def rank(t: int) -> int:
                return view.count_before(log.first_after(t))
        else:

            def rank(t: int) -> int:
                return min(max(log.first_after(t), lo), hi) - lo

        return MergeView(base, added, times, rank, log.row_time(hi - 1))

    def business_order(self, selection: Selection, *, reverse: bool = False) -> Sequence[int]:
        """``selection`` (in UTC order) by business time, ties in UTC order (``reverse``:
        the exact reverse), streamed as read (``_event_business``)."""
        if len(self._venues) == 1 and len(selection) < 2:
            return selection[::-1] if reverse else selection
        return BusinessView(
            selection, self._log.row, self._offset, len(self._venues), reverse=reverse
        )


class _LocalTimes(Sequence[int]):
    """Every event's local wall time, read on demand (:meth:`EventStore.local_time`)."""

    def __init__(self, store: EventStore) -> None:
        self._store = store

    def __len__(self) -> int:
        return len(self._store)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._store.local_time(j) for j in range(*i.indices(len(self)))]
        return self._store.local_time(i if i >= 0 else i + len(self))
