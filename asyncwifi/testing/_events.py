"""The event log, stored compactly and served fast (spec §2.4, §4.5).

A million events fit in a few arrays: epoch seconds, a type code and an owner (contact
index) per event. Everything else about an event (its id, its sub-object) is derived from
its index and the seed, so nothing per event is kept as a Python object. Indices only grow:
an event added late (its time before the newest event's: a visit written when the guest
leaves, an access point uploading after an outage) takes the next index like any other, and
an order of the indices by time serves the queries from then on. The JSON of
each event is built lazily, one chunk of events at a time, and cached as one ``bytes`` blob
with offsets; a page body is then a join of slices of those blobs.

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
from itertools import accumulate
from typing import Any
from zoneinfo import ZoneInfo

import msgspec

from asyncwifi import _rules
from asyncwifi.errors import ConfigurationError
from asyncwifi.testing._event_draws import CODE_TABLE, draw_owners, poisson_times
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
from asyncwifi.testing._util import iso_z, mix

__all__ = ["EVENT_TYPES", "UNDOCUMENTED_TYPES", "EventStore", "Venue"]

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


#: a selection of event indices, in serving order
Selection = range | array  # type: ignore[type-arg]


class EventStore:
    """All events of the simulated organization, sorted by time (see the module docstring)."""

    CHUNK = 2048

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
        rnd = random.Random(mix(seed, 0xE7E7))
        self._contacts = list(owners) or [("", "", "")]
        self._venues = list(venues) or [("", "", "", "UTC")]
        #: the record shape served (see ``_event_records``)
        self.shape: EventShape = shape
        #: epoch seconds of each event (by index): ascending until an event is added late
        self.times = poisson_times(rnd, count, float(start), float(end))
        #: the type code of each event (an index into ``EVENT_TYPES + UNDOCUMENTED_TYPES``)
        self.codes = rnd.randbytes(count).translate(CODE_TABLE)
        #: the index of the contact each event belongs to
        self.owners = draw_owners(rnd, self.codes, self._contacts)
        # each contact's events happen at its home venue (so one contact's events are in
        # the same order by business time and by UTC; the organization's are not)
        self._homes = rnd.randbytes(len(owners) or 1).translate(
            bytes(v % len(self._venues) for v in range(256))
        )
        #: the venue (index into the venues) of each event
        self.venue = self._venues_of(self.owners)
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
        self._business: array[int] | None = None
        n_chunks = -(-count // self.CHUNK) if count else 0
        self._chunks: list[tuple[bytes, array[int]] | None] = [None] * n_chunks
        self._rchunks: list[tuple[bytes, array[int]] | None] = [None] * n_chunks
        self._patched: dict[int, bytes] = {}  # events served as changed (``patch_event``)
        self._encode = msgspec.json.Encoder().encode
        self._by_type: list[array[int]] | None = None
        self._by_owner: dict[int, array[int]] | None = None
        #: the indices in time order (ties in index order), and their times; None while
        #: that is the order of the indices (no event was added late)
        self._order: array[int] | None = None
        self._ordered_times: array[int] | None = None

    def _venues_of(self, owners: array[int]) -> bytes:
        homes = self._homes
        return bytes(homes[o] for o in owners) if len(homes) > 1 else bytes(len(owners))

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
        n = len(self.times)
        late = bool(n) and start < self.newest()
        if not count:
            return range(n, n)
        self.appends += 1
        rnd = random.Random(mix(self._seed, 0xE7E7, self.appends))
        times = poisson_times(rnd, count, float(start), float(end))
        codes = rnd.randbytes(count).translate(CODE_TABLE)
        owners = draw_owners(rnd, codes, self._contacts)
        if n % self.CHUNK:  # the last chunk was partial: its cached encodings grow stale
            self._chunks[-1] = self._rchunks[-1] = None
        self.times.extend(times)
        self.codes += codes
        self.owners.extend(owners)
        self.venue += self._venues_of(owners)
        grow = -(-len(self.times) // self.CHUNK) - len(self._chunks)
        self._chunks.extend([None] * grow)
        self._rchunks.extend([None] * grow)
        self._business = self._by_type = self._by_owner = None
        self.start = min(self.start, float(start))
        self.end = max(self.end, float(end))
        if late or self._order is not None:
            self._reorder(n, late)
        return range(n, len(self.times))

    def newest(self) -> int:
        """The newest event's time (epoch seconds); the log must not be empty."""
        return self.times[-1] if self._order is None else self.times[self._order[-1]]

    def _reorder(self, n: int, late: bool) -> None:
        """Keep the order by time once events were added late (from index ``n`` on)."""
        times, added = self.times, range(n, len(self.times))
        if self._order is None or self._ordered_times is None:
            order: array[int] = array("I", range(n))
            ordered: array[int] = times[:n]
        else:
            order, ordered = self._order, self._ordered_times
        if late:  # a stable sort of two sorted runs: ties keep the index order
            order = array("I", sorted([*order, *added], key=times.__getitem__))
            ordered = array("q", [times[i] for i in order])
        else:  # at or after the newest: they go at the end
            order.extend(added)
            ordered.extend(times[n:])
        self._order, self._ordered_times = order, ordered

    def __len__(self) -> int:
        return len(self.times)

    # -- identity and content -------------------------------------------------------------

    def event_id(self, i: int) -> str:
        """The id of event ``i``: 24 hex digits, time-prefixed like an ObjectId, unique."""
        return "%024x" % ((self.times[i] & 0xFFFFFFFF) << 64 | self._salt40 | i)

    def _offset(self, venue: int, t: int) -> int:
        """The UTC offset (seconds) of ``venue``'s time zone at ``t``, cached by the hour."""
        hour = t // 3600
        offset = self._offsets.get((venue, hour))
        if offset is None:
            delta = datetime.fromtimestamp(hour * 3600, self._zones[venue]).utcoffset()
            offset = self._offsets[venue, hour] = int(delta.total_seconds()) if delta else 0
        return offset

    def _local(self, venue: int, t: int) -> str:
        """``t`` as local wall time (no zone) at ``venue``."""
        return iso_z(t + self._offset(venue, t))[:-1]

    def business_times(self) -> array[int]:
        """Each event's local wall time at its venue, as epoch-like seconds (what the
        API's default ``sortBy=businessTime`` orders by; not UTC order across zones)."""
        if self._business is None:
            offset, venue = self._offset, self.venue
            self._business = array("q", [t + offset(venue[i], t) for i, t in enumerate(self.times)])
        return self._business

    def _build(self, i: int) -> Flat | Nested:
        t = self.times[i]
        code = self.codes[i]
        ident = "%024x" % ((t & 0xFFFFFFFF) << 64 | self._salt40 | i)
        kind = _ALL_TYPES[code]
        ev: Flat | Nested
        if self.shape == "nested":
            v = self.venue[i]
            owner = self.owners[i]
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
            v = self.venue[i]
            ev.visit = Visit(iso_z(begin), self._local(v, begin), self._venues[v][3], duration)
        elif code == 1:
            ev.signup = Signup(_SOURCES[h % len(_SOURCES)])
        elif 3 <= code <= 5:
            name, cid = _CAMPAIGNS[h % len(_CAMPAIGNS)]
            email = self._contacts[self.owners[i] % len(self._contacts)][0]
            ev.email = EmailInfo(cid, f"com-{cid[4:]}-{h % 97:02d}", "email", name, email)
        elif code in (6, 7):
            name, cid = _CAMPAIGNS[h % len(_CAMPAIGNS)]
            _, phone, prefix = self._contacts[self.owners[i] % len(self._contacts)]
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

    def _chunk(self, k: int) -> tuple[bytes, array[int]]:
        cached = self._chunks[k]
        if cached is not None:
            return cached
        lo = k * self.CHUNK
        hi = min(len(self.times), lo + self.CHUNK)
        enc, build = self._encode, self._build
        parts = [enc(build(i)) for i in range(lo, hi)]
        for i in (j for j in self._patched if lo <= j < hi):
            parts[i - lo] = self._patched[i]
        parts.append(b"")
        blob = b",".join(parts)  # every event followed by a comma
        offsets = array("I", accumulate((len(p) + 1 for p in parts[:-1]), initial=0))
        self._chunks[k] = (blob, offsets)
        return blob, offsets

    def warm(self, stop: threading.Event | None = None) -> None:
        """Encode every event now (benchmarks call it so that timing starts warm); on a
        thread, ``stop`` ends it between two chunks (a command stopped meanwhile)."""
        for k in range(len(self._chunks)):
            if stop is not None and stop.is_set():
                return
            self._chunk(k)

    def event_json(self, i: int) -> bytes:
        """The JSON bytes of event ``i``, as served."""
        blob, off = self._chunk(i // self.CHUNK)
        r = i % self.CHUNK
        return blob[off[r] : off[r + 1] - 1]

    def record(self, i: int) -> dict[str, Any]:
        """Event ``i`` as a decoded dict (for tests)."""
        decoded: dict[str, Any] = msgspec.json.decode(self.event_json(i))
        return decoded

    def join(self, indices: Sequence[int]) -> bytes:
        """The events at ``indices`` as the inside of a JSON array (``{..},{..}``)."""
        if not indices:
            return b""
        size = self.CHUNK
        if isinstance(indices, range) and indices.step == 1:
            pieces: list[bytes | memoryview] = []
            lo, hi = indices.start, indices.stop
            k = lo // size
            while lo < hi:
                blob, off = self._chunk(k)
                end = min(hi, (k + 1) * size)
                pieces.append(memoryview(blob)[off[lo - k * size] : off[end - k * size]])
                lo, k = end, k + 1
            out = b"".join(pieces)
            return out[:-1]
        if isinstance(indices, range) and indices.step == -1:
            return self._join_reversed(indices)
        # any other order: consecutive indices mostly share a chunk, so look it up once
        parts = []
        chunk = self._chunk
        base = -2 * size  # no chunk loaded yet
        blob, off = b"", array("I")
        for i in indices:
            if not base <= i < base + size:
                blob, off = chunk(i // size)
                base = i - i % size
            r = i - base
            parts.append(blob[off[r] : off[r + 1] - 1])
        return b",".join(parts)

    def _rchunk(self, k: int) -> tuple[bytes, array[int]]:
        """Chunk ``k`` with its events in reverse order (built on first use)."""
        cached = self._rchunks[k]
        if cached is not None:
            return cached
        blob, off = self._chunk(k)
        parts = [blob[off[r] : off[r + 1]] for r in range(len(off) - 2, -1, -1)]
        offsets = array("I", accumulate((len(p) for p in parts), initial=0))
        self._rchunks[k] = cached = (b"".join(parts), offsets)
        return cached

    def _join_reversed(self, indices: range) -> bytes:
        """A descending run (``sortReverse=true`` pages): slices of reversed chunks."""
        size = self.CHUNK
        pieces: list[memoryview] = []
        hi, lo = indices.start, indices.stop  # hi included, lo excluded
        while hi > lo:
            k = hi // size
            base = k * size
            blob, off = self._rchunk(k)
            last = len(off) - 2  # reversed position of the chunk's first event
            stop = max(lo, base - 1)
            pieces.append(memoryview(blob)[off[last - (hi - base)] : off[last - (stop - base)]])
            hi = stop
        return b"".join(pieces)[:-1]

    # -- queries --------------------------------------------------------------------------

    def bounds(self, start: float | None, end: float | None) -> tuple[int, int]:
        """The range of time-order positions of events with ``start <= date <= end`` (spec
        §4.5): indices, while no event was added late."""
        times = self.times if self._ordered_times is None else self._ordered_times
        lo = 0 if start is None else bisect_left(times, start)
        hi = len(times) if end is None else bisect_right(times, end)
        return lo, max(lo, hi)

    def select(
        self,
        start: float | None = None,
        end: float | None = None,
        types: Iterable[str] | None = None,
        owner: int | None = None,
    ) -> Selection:
        """The indices of matching events in ascending time order."""
        lo, hi = self.bounds(start, end)
        codes = None if types is None else {TYPE_CODES[t] for t in types}
        if self._order is not None:  # events were added late: positions are not indices
            part = self._order[lo:hi]
            if owner is None and codes is None:
                return part
            owners, all_codes = self.owners, self.codes
            return array(
                "I",
                [
                    i
                    for i in part
                    if (owner is None or owners[i] == owner)
                    and (codes is None or all_codes[i] in codes)
                ],
            )
        if owner is not None:
            mine = self._owner_index().get(owner, array("I"))
            part = mine[bisect_left(mine, lo) : bisect_left(mine, hi)]
            if codes is None:
                return part
            all_codes = self.codes
            return array("I", [i for i in part if all_codes[i] in codes])
        if codes is None:
            return range(lo, hi)
        by_type = self._type_index()
        slices = [
            by_type[c][bisect_left(by_type[c], lo) : bisect_left(by_type[c], hi)] for c in codes
        ]
        if len(slices) == 1:
            return slices[0]
        merged: list[int] = []
        for s in slices:
            merged.extend(s)
        merged.sort()
        return array("I", merged)

    def business_order(self, selection: Selection) -> Selection:
        """``selection`` (in UTC order) sorted by business time, ties in UTC order."""
        if len(self._venues) == 1 and len(selection) < 2:
            return selection
        local = self.business_times()
        return array("I", sorted(selection, key=local.__getitem__))

    def _type_index(self) -> list[array[int]]:
        if self._by_type is None:
            lists: list[list[int]] = [[] for _ in _ALL_TYPES]
            for i, code in enumerate(self.codes):
                lists[code].append(i)
            self._by_type = [array("I", lst) for lst in lists]
        return self._by_type

    def _owner_index(self) -> dict[int, array[int]]:
        if self._by_owner is None:
            groups: dict[int, list[int]] = {}
            for i, who in enumerate(self.owners):
                groups.setdefault(who, []).append(i)
            self._by_owner = {who: array("I", lst) for who, lst in groups.items()}
        return self._by_owner
