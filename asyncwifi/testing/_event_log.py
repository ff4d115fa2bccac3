"""The event log's columns (time, type code, owner, venue), drawn block by block from the seed.

The seeded events (``count`` of them over ``[start, end)``) are never held whole: block ``k``
(events ``k * SIZE`` .. ``k * SIZE + SIZE``) is drawn from its own seeded ``Random`` whenever
it is read and kept in a small cache, so a log of twenty million events costs what a few
blocks cost, and the same block comes out the same on every read. Each block spans an equal
share of the range and holds Poisson arrivals scaled to it, so the times ascend across
blocks. Events appended later (:meth:`EventLog.append`: the feed, late events) are few and
kept in arrays after the seeded ones. A small log (``HELD`` events at most: every test's)
is drawn whole at once, as one run of draws, and held: its columns cost little.
"""

from __future__ import annotations

import random
from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, overload

from asyncwifi.testing._event_draws import (
    CODE_TABLE,
    draw_owners,
    owner_tables,
    poisson_times,
    redirect,
)
from asyncwifi.testing._util import mix

__all__ = ["Block", "Column", "EventLog"]

#: how many type codes there are (``EVENT_TYPES + UNDOCUMENTED_TYPES``)
N_CODES = 11


class Block(NamedTuple):
    """One block's columns: epoch seconds, type codes, owners (contact indices), venues."""

    times: array[int]
    codes: bytes
    owners: array[int]
    venue: bytes


class EventLog:
    """``count`` seeded events drawn by block, then the appended ones (see the module)."""

    SIZE = 2048
    #: blocks kept drawn (a few scroll positions and a business-time window)
    CACHE = 48
    #: a log this small is drawn whole and held (about 14 bytes an event)
    HELD = 1 << 17

    def __init__(
        self,
        *,
        seed: int,
        count: int,
        start: float,
        end: float,
        contacts: Sequence[tuple[str, str, str]],
        venues: int,
    ) -> None:
        self._seed = seed
        #: how many events are seeded (drawn by block); appended ones follow
        self.base = count
        self._start, self._span = float(start), float(end) - float(start)
        self._n = max(1, len(contacts))
        self._tables = owner_tables(contacts)
        rnd = random.Random(mix(seed, 0xE7E7))
        held = None
        if count <= self.HELD:
            times = poisson_times(rnd, count, float(start), float(end))
            codes = rnd.randbytes(count).translate(CODE_TABLE)
            held = (times, codes, draw_owners(rnd, codes, contacts))
        # each contact's events happen at its home venue (so one contact's events are in
        # the same order by business time and by UTC; the organization's are not)
        self._homes = rnd.randbytes(len(contacts) or 1).translate(
            bytes(v % venues for v in range(256))
        )
        self._held = None if held is None else Block(*held, self.venues_of(held[2]))
        self._cache: OrderedDict[int, Block] = OrderedDict()
        self._counts: dict[int, array[int]] = {}  # type codes per block (filters)
        self.add_times: array[int] = array("q")
        self.add_codes = bytearray()
        self.add_owners: array[int] = array("I")
        self.add_venue = bytearray()
        #: the columns, as sequences over every event (tests and small logs read them)
        self.times = Column(self, 0)
        self.codes = Column(self, 1)
        self.owners = Column(self, 2)
        self.venue = Column(self, 3)

    def __len__(self) -> int:
        return self.base + len(self.add_times)

    @property
    def blocks(self) -> int:
        """How many seeded blocks there are."""
        return -(-self.base // self.SIZE)

    def _codes(self, k: int, n: int) -> bytes:
        if self._held is not None:
            return self._held.codes[k * self.SIZE : k * self.SIZE + n]
        return random.Random(mix(self._seed, 0xC0DE, k)).randbytes(n).translate(CODE_TABLE)

    def block(self, k: int) -> Block:
        """Seeded block ``k`` (drawn again when it left the cache: the same every time)."""
        cached = self._cache.get(k)
        if cached is not None:
            self._cache.move_to_end(k)
            return cached
        lo = k * self.SIZE
        n = min(self.SIZE, self.base - lo)
        if self._held is not None:
            h, hi = self._held, lo + n
            return Block(h.times[lo:hi], h.codes[lo:hi], h.owners[lo:hi], h.venue[lo:hi])
        first = self._start + self._span * lo / self.base
        last = self._start + self._span * (lo + n) / self.base
        times = poisson_times(random.Random(mix(self._seed, 0x713E, k)), n, first, last)
        codes = self._codes(k, n)
        raw = array("I", random.Random(mix(self._seed, 0x0E, k)).randbytes(4 * n))
        owners = array("I", map(self._n.__rmod__, raw))
        redirect(owners, codes, self._tables)
        block = Block(times, codes, owners, self.venues_of(owners))
        self._cache[k] = block
        if len(self._cache) > self.CACHE:
            self._cache.popitem(last=False)
        return block

    def venues_of(self, owners: array[int]) -> bytes:
        """Each owner's home venue (a contact's events all happen at its home)."""
        homes = self._homes
        return bytes(homes[o] for o in owners) if len(homes) > 1 else bytes(len(owners))

    def code_counts(self, k: int) -> array[int]:
        """How many events of each type code block ``k`` holds (drawn from the codes only)."""
        counts = self._counts.get(k)
        if counts is None:
            codes = self._codes(k, min(self.SIZE, self.base - k * self.SIZE))
            counts = self._counts[k] = array("I", [codes.count(c) for c in range(N_CODES)])
        return counts

    def row(self, i: int) -> tuple[int, int, int, int]:
        """Event ``i``'s time, type code, owner and venue."""
        if i >= self.base:
            j = i - self.base
            return self.add_times[j], self.add_codes[j], self.add_owners[j], self.add_venue[j]
        if self._held is not None:
            b, r = self._held, i
        else:
            b, r = self.block(i // self.SIZE), i % self.SIZE
        return b.times[r], b.codes[r], b.owners[r], b.venue[r]

    def row_time(self, i: int) -> int:
        """Event ``i``'s time (epoch seconds)."""
        if i >= self.base:
            return self.add_times[i - self.base]
        if self._held is not None:
            return self._held.times[i]
        return self.block(i // self.SIZE).times[i % self.SIZE]

    def append(self, times: array[int], codes: bytes, owners: array[int]) -> None:
        """Events added after the others (their draws made by the caller)."""
        self.add_times.extend(times)
        self.add_codes += codes
        self.add_owners.extend(owners)
        self.add_venue += self.venues_of(owners)

    def spans(self, lo: int, hi: int) -> Iterator[tuple[int, Block, int, int]]:
        """The seeded blocks over indices ``[lo, hi)``: (first index, block, from, to)."""
        hi = min(hi, self.base)
        while lo < hi:
            k = lo // self.SIZE
            base = k * self.SIZE
            to = min(hi - base, self.SIZE)
            yield base, self.block(k), lo - base, to
            lo = base + to

    def first_at_or_after(self, t: float) -> int:
        """The first seeded index whose time is at least ``t`` (``base`` when none)."""
        return self._search(t, bisect_left)

    def first_after(self, t: float) -> int:
        """The first seeded index whose time is after ``t`` (``base`` when none)."""
        return self._search(t, bisect_right)

    def _search(self, t: float, bisect: Any) -> int:
        if not self.base:
            return 0
        if self._held is not None:
            return int(bisect(self._held.times, t))
        if self._span <= 0:  # every seeded event at the same second
            return int(bisect(self.block(0).times[:1], t)) * self.base
        # the block whose share of the range holds t, less one (times are whole seconds:
        # the previous block's last ones may share its first second)
        k = int((t - self._start) / self._span * self.base) // self.SIZE - 1
        k = min(max(k, 0), self.blocks - 1)
        while k > 0 and bisect(self.block(k).times, t) == 0:
            k -= 1
        while k < self.blocks:
            times = self.block(k).times
            r = int(bisect(times, t))
            if r < len(times):
                return k * self.SIZE + r
            k += 1
        return self.base


class Column(Sequence[int]):
    """One column over every event (seeded, then appended): read by block, never held."""

    __slots__ = ("_field", "_log")

    def __init__(self, log: EventLog, field: int) -> None:
        self._log, self._field = log, field

    def __len__(self) -> int:
        return len(self._log)

    def _added(self) -> Sequence[int]:
        log = self._log
        return (log.add_times, log.add_codes, log.add_owners, log.add_venue)[self._field]

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[int]: ...
    def __getitem__(self, i: int | slice) -> int | Sequence[int]:
        if isinstance(i, slice):
            picked = [self[j] for j in range(*i.indices(len(self)))]
            return bytes(picked) if self._field in (1, 3) else array("q", picked)
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("event index out of range")
        log = self._log
        if i >= log.base:
            return self._added()[i - log.base]
        return log.block(i // log.SIZE)[self._field][i % log.SIZE]

    def __iter__(self) -> Iterator[int]:
        log = self._log
        for _, block, a, b in log.spans(0, log.base):
            yield from block[self._field][a:b]
        yield from self._added()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]
