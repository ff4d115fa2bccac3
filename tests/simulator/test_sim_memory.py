"""The simulator's memory does not grow with its range (issue 43): its seeded events are drawn
block by block from the seed when read, kept in a small cache, and come out the same on
every read; queries (dates, types, late events, business order, reversed) served from blocks
give what the whole log would."""

from __future__ import annotations

import tracemalloc
from datetime import UTC, datetime

import pytest

from asyncwifi.testing import Simulator
from asyncwifi.testing._data import SimulatorData
from asyncwifi.testing._event_log import EventLog
from asyncwifi.testing._events import TYPE_CODES
from tests._virtualclock import VirtualClock
from tests.simulator.simhelpers import BOUNDARY


def test_twenty_million_events_are_served_from_a_few_megabytes() -> None:
    tracemalloc.start()
    try:
        events = Simulator(events=20_000_000).data.events
        built = tracemalloc.get_traced_memory()[0]
        first = events.join(range(2_000))
        pages = [events.join(range(p, p + 2_000)) for p in range(0, 20_000_000, 2_497_331)]
        last = events.join(range(19_998_000, 20_000_000))
        logins = events.select(types=["login"])
        deep = logins[len(logins) // 2 : len(logins) // 2 + 1_000]
        start = events.times[10_000_000]
        hour = events.business_order(events.select(start, start + 600))
        everything = events.business_order(events.select(), reverse=True)
        newest_local = everything[:1_000]  # the first page of a whole scroll: a window
        backwards = events.select(types=["visit"])[::-1][:500]
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert built < 2_000_000  # nothing per event
    assert peak < 80_000_000, peak
    assert current < 60_000_000, current
    assert events.times[-1] < Simulator.DEFAULTS.events_end
    # the same bytes after the blocks and chunks left their caches: drawn again, the same
    assert events.join(range(2_000)) == first
    assert events.join(range(19_998_000, 20_000_000)) == last
    assert pages[3] == events.join(range(3 * 2_497_331, 3 * 2_497_331 + 2_000))
    assert all(events.record(i)["event"]["type"] == "login" for i in deep)
    assert len(hour) > 1_000
    assert len(newest_local) == 1_000
    assert backwards[0] > backwards[-1]


def _data(events: int = 5_000, seed: int = 11) -> SimulatorData:
    return SimulatorData(
        seed=seed,
        organization="org-blocks",
        contacts=30,
        hotspots=12,
        segments=0,
        events=events,
        events_start=datetime(2024, 3, 20, tzinfo=UTC),
        events_end=datetime(2024, 4, 5, tzinfo=UTC),  # across a DST change (Europe, US)
        event_shape="nested",
        hotspot_date="modified",
        clock=VirtualClock.stepping(BOUNDARY),
    )


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small logs drawn by (small) blocks, as a big one is, with a cache of three blocks."""
    monkeypatch.setattr(EventLog, "HELD", 0)
    monkeypatch.setattr(EventLog, "SIZE", 256)
    monkeypatch.setattr(EventLog, "CACHE", 3)


@pytest.mark.usefixtures("drawn")
def test_queries_served_from_blocks_match_the_whole_log() -> None:
    data = _data()
    store = data.events
    times = list(store.times)
    assert times == sorted(times)
    assert len(times) == 5_000
    assert list(_data().events.times) == times  # the same seed: the same log
    late = data.add_events(300, at=times[1_000], until=times[3_000])  # among the seeded
    data.add_events(50)  # and at the clock's now, after them
    every = range(len(store))
    times, codes, owners = list(store.times), list(store.codes), list(store.owners)
    in_order = sorted(every, key=lambda i: (times[i], i))
    assert list(store.select()) == in_order
    low, high = times[700], times[4_200]
    window = [i for i in in_order if low <= times[i] <= high]
    assert list(store.select(low, high)) == window
    assert set(late) <= {store.event_id(i) for i in window}
    kinds = {2, 4, 9}
    typed = [i for i in window if codes[i] in kinds]
    names = [name for name, code in TYPE_CODES.items() if code in kinds]
    selected = store.select(low, high, names)
    assert list(selected) == typed
    assert list(selected[::-1]) == typed[::-1]
    assert list(selected[10:333]) == typed[10:333]
    assert list(store.select(low, high, None, 7)) == [i for i in window if owners[i] == 7]
    local = [store.local_time(i) for i in every]
    by_business = sorted(window, key=lambda i: local[i])  # stable: ties in UTC order
    assert list(store.business_order(store.select(low, high))) == by_business
    backwards = store.business_order(store.select(low, high), reverse=True)
    assert list(backwards) == by_business[::-1]
    assert list(backwards[40:90]) == by_business[::-1][40:90]  # a page read again
    assert list(backwards[:10]) == by_business[::-1][:10]
    # records and ids read again after their blocks left the cache: the same
    first = [store.event_json(i) for i in range(0, 5_000, 97)]
    assert [store.event_json(i) for i in range(0, 5_000, 97)] == first
    again = _data().events
    assert [store.event_id(i) for i in range(5_000)] == [again.event_id(i) for i in range(5_000)]
