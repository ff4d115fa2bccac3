"""New events appear in the log (``SimulatorData.add_events``): new unique ids in time order,
served on every record shape by pages, filters and new scrolls; a scroll opened before an
append ends as it began; late events (their time before the newest event's) take new ids
and their place in time order."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from asyncwifi.errors import ConfigurationError
from asyncwifi.testing._data import SimulatorData
from asyncwifi.testing._util import iso_z
from tests._virtualclock import VirtualClock
from tests.simulator.conftest import CallerFactory
from tests.simulator.simhelpers import BOUNDARY
from tests.simulator.test_sim_events import EVENTS, ident, scroll_events

#: not a multiple of the store's chunk (2,048): the last chunk is partial, and cached
COUNT = 3_000


def make_data(seed: int = 5, events: int = COUNT) -> SimulatorData:
    return SimulatorData(
        seed=seed,
        organization="org-append",
        contacts=40,
        hotspots=6,
        segments=0,
        events=events,
        events_start=datetime(2024, 1, 1, tzinfo=UTC),
        events_end=datetime(2024, 1, 31, tzinfo=UTC),
        event_shape="nested",
        hotspot_date="modified",
        clock=VirtualClock.stepping(BOUNDARY),
    )


def warm(data: SimulatorData) -> None:
    """Build every cache and index of the event store, so that an append must renew them."""
    store = data.events
    store.join(range(len(store)))
    store.join(range(len(store) - 1, -1, -1))
    store.business_times()
    data.event_ids(types=["login"])
    data.event_ids(customer=data.contact_order[3])


def test_appended_events_have_new_unique_ids_in_time_order() -> None:
    data = make_data()
    warm(data)
    before = data.event_ids()
    newest = data.events.times[-1]
    first = data.add_events(2_000)  # crosses a chunk boundary
    second = data.add_events(3, at=BOUNDARY + 10, until=datetime.fromtimestamp(BOUNDARY + 20, UTC))
    third = data.add_events(5, at=iso_z(BOUNDARY + 20))  # at the newest second: allowed
    assert data.add_events(0, at=BOUNDARY + 20) == []
    added = first + second + third
    assert len(added) == len(set(added)) == 2_008
    assert not set(added) & set(before)
    store = data.events
    times = list(store.times)
    assert times == sorted(times)
    assert len(store) == len(store.codes) == len(store.owners) == len(store.venue) == 5_008
    assert min(times[COUNT:]) >= newest
    assert set(times[COUNT : COUNT + 2_000]) == {int(BOUNDARY)}  # the clock's now
    assert all(BOUNDARY + 10 <= t <= BOUNDARY + 20 for t in times[COUNT + 2_000 : -5])
    assert set(times[-5:]) == {int(BOUNDARY + 20)}
    assert data.event_ids() == before + added
    assert data.event_ids(BOUNDARY + 1) == second + third
    assert store.end == BOUNDARY + 20
    # the cached chunks and indexes were renewed: records, filters and business order
    assert [ident(store.record(i)) for i in range(COUNT - 2, len(store))] == (before[-2:] + added)
    joined = store.join(range(len(store) - 1, COUNT - 3, -1))
    assert joined.count(b"},{") == len(added) + 1
    assert len(store.business_times()) == len(store)
    logins = data.event_ids(types=["login"])
    assert set(logins) - set(before) == {
        added[i] for i in range(len(added)) if store.codes[COUNT + i] == 2
    }
    owner = data.contact_order[3]
    mine = set(data.event_ids(customer=owner)) - set(before)
    assert mine == {added[i] for i in range(len(added)) if store.owners[COUNT + i] == 3}
    # deterministic from the seed and the number of appends (each append draws anew)
    again = make_data()
    assert again.add_events(2_000) == first
    assert again.add_events(3, at=BOUNDARY + 10, until=BOUNDARY + 20) == second
    assert again.events.codes == store.codes[: COUNT + 2_003]
    again.add_events(2_000, at=BOUNDARY + 20)
    assert again.events.codes[-2_000:] != again.events.codes[COUNT : COUNT + 2_000]


def test_bad_appends_are_refused() -> None:
    data = make_data()
    with pytest.raises(ConfigurationError, match="end not before start"):
        data.add_events(1, at=BOUNDARY, until=BOUNDARY - 1)
    with pytest.raises(ConfigurationError, match="count must be >= 0"):
        data.add_events(-1)
    assert len(data.events) == COUNT  # nothing changed
    # an empty log takes events from any time
    empty = make_data(events=0)
    assert len(empty.add_events(4, at=0.0, until=1.0)) == 4


def test_late_events_take_new_ids_and_their_place_in_time() -> None:
    data = make_data()
    warm(data)
    before = data.event_ids()
    store = data.events
    old_times = list(store.times)
    middle = old_times[COUNT // 2]  # a second some events already hold
    late = data.add_events(40, at=middle, until=middle + 3_600)  # among old events
    early = data.add_events(3, at=old_times[0] - 60)  # before the first one
    now = data.add_events(5)  # then new ones again, at the clock's now
    added = late + early + now
    assert len(added) == len(set(added)) == 48
    assert not set(added) & set(before)
    # served in time order (ties in the order they were added), the new ids among the old
    everything = data.event_ids()
    assert sorted(everything) == sorted(before + added)
    time_of = dict(zip(before + added, old_times + list(store.times[COUNT:]), strict=True))
    assert [time_of[i] for i in everything] == sorted(time_of[i] for i in everything)
    assert everything[:3] == early
    assert everything[-5:] == now
    at_middle = [i for i in everything if time_of[i] == middle]
    assert at_middle == sorted(at_middle, key=index_of)  # ties: the older index first
    # the date filter applies to the event's own time, and every filter sees them
    window = data.event_ids(middle, middle + 3_600)
    assert set(late) <= set(window)
    assert window == [i for i in everything if middle <= time_of[i] <= middle + 3_600]
    logins = data.event_ids(types=["login"])
    assert logins == [i for i in everything if store.codes[index_of(i)] == 2]
    owner = data.contact_order[3]
    assert data.event_ids(customer=owner) == [
        i for i in everything if store.owners[index_of(i)] == 3
    ]
    # the old events keep their ids and records
    assert [ident(store.record(i)) for i in range(COUNT)] == before
    # deterministic from the seed and the number of appends
    again = make_data()
    again.add_events(40, at=middle, until=middle + 3_600)
    again.add_events(3, at=old_times[0] - 60)
    assert again.event_ids() == [i for i in everything if i not in now]


def index_of(ident_: str) -> int:
    """An id's index in the store (its low bits: see ``EventStore.event_id``)."""
    return int(ident_, 16) & 0xFFFFFFFFFF


@pytest.mark.parametrize("shape", ["nested", "flat", "dated"])
async def test_pages_over_the_new_range_serve_the_new_events(
    make_caller: CallerFactory, shape: str
) -> None:
    clock = VirtualClock.stepping(BOUNDARY)
    caller = await make_caller(clock=clock, events=COUNT, event_shape=shape)
    sim = caller.sim
    path = caller.org(EVENTS, "/events")
    # pages before the append fill the store's caches (the partial last chunk included)
    everything, _ = await scroll_events(caller, size="2000", sortBy="utcTime")
    assert len(everything) == COUNT
    await scroll_events(caller, size="2000", sortReverse="true")
    added = sim.data.add_events(700)
    clock.set(BOUNDARY + 30)
    added += sim.data.add_events(600, at=BOUNDARY + 30, until=BOUNDARY + 90)
    since = iso_z(BOUNDARY)
    page = (await caller.get(path, size="2000", sortBy="utcTime", dateStart=since)).json
    assert [ident(e) for e in page["events"]] == added
    newest_first = await caller.get(
        path, size="2000", sortBy="utcTime", sortReverse="true", dateStart=since
    )
    assert [ident(e) for e in newest_first.json["events"]] == added[::-1]
    business = (await caller.get(path, size="2000", dateStart=since)).json["events"]
    assert sorted(ident(e) for e in business) == sorted(added)
    scrolled, _ = await scroll_events(caller, size="500", sortBy="utcTime")
    assert [ident(e) for e in scrolled] == [ident(e) for e in everything] + added
    logins = (await caller.get(path, size="2000", events="login", dateStart=since)).json
    new_logins = sim.data.event_ids(BOUNDARY, None, ["login"])
    assert {ident(e) for e in logins["events"]} == set(new_logins)
    assert logins["count"] > 0
    times = [iso_z(t) for t in sim.data.events.times[COUNT:]]
    records = page["events"]
    if shape == "nested":
        assert [e["when"]["createdAt"] for e in records] == times
    elif shape == "dated":
        assert [e["date"] for e in records] == times
    else:
        assert not any("date" in e or "when" in e for e in records)


@pytest.mark.parametrize("shape", ["nested", "flat", "dated"])
async def test_a_scroll_opened_before_an_append_ends_as_it_began(
    make_caller: CallerFactory, shape: str
) -> None:
    caller = await make_caller(
        clock=VirtualClock.stepping(BOUNDARY), events=COUNT, event_shape=shape
    )
    sim = caller.sim
    path = caller.org(EVENTS, "/events")
    opened = {}
    for name, params in {
        "utc": {"sortBy": "utcTime"},
        "newest first": {"sortBy": "utcTime", "sortReverse": "true"},
        "business": {},
        "typed": {"events": "login,promo", "sortBy": "utcTime"},
    }.items():
        answer = await caller.get(path, enableScroll="true", size="1100", **params)
        opened[name] = (answer.json, [ident(e) for e in answer.json["events"]])
    expected = {
        "utc": sim.data.event_ids(),
        "newest first": sim.data.event_ids()[::-1],
        "business": None,
        "typed": sim.data.event_ids(types=["login", "promo"]),
    }
    added = sim.data.add_events(2_500)  # fills the partial chunk and adds another
    for name, (body, ids) in opened.items():
        while body["count"]:
            body = (await caller.get(path, scrollId=body["scrollId"])).json
            ids += [ident(e) for e in body["events"]]
        want = expected[name]
        if want is None:  # business order: the same events, local time order
            assert sorted(ids) == sorted(sim.data.event_ids()[:COUNT])
        else:
            assert ids == want, name
        assert not set(ids) & set(added)


@pytest.mark.parametrize("shape", ["nested", "flat", "dated"])
async def test_late_events_are_served_at_once_in_time_order(
    make_caller: CallerFactory, shape: str
) -> None:
    caller = await make_caller(
        clock=VirtualClock.stepping(BOUNDARY), events=COUNT, event_shape=shape
    )
    sim = caller.sim
    path = caller.org(EVENTS, "/events")
    opened = (await caller.get(path, enableScroll="true", size="2000", sortBy="utcTime")).json
    old = sim.data.event_ids()
    middle = sim.data.events.times[COUNT // 2]
    late = sim.data.add_events(30, at=middle - 600, until=middle)  # up to 10 minutes late
    window = {"dateStart": iso_z(middle - 600), "dateEnd": iso_z(middle)}
    page = (await caller.get(path, size="2000", sortBy="utcTime", **window)).json
    served = [ident(e) for e in page["events"]]
    assert served == sim.data.event_ids(middle - 600, middle)
    assert set(late) <= set(served)
    if shape != "flat":  # records that carry their time come in its order
        key = "when" if shape == "nested" else "date"
        texts = [e["when"]["createdAt"] if key == "when" else e["date"] for e in page["events"]]
        assert texts == sorted(texts)
    newest_first = await caller.get(path, size="2000", sortBy="utcTime", sortReverse="true",
                                    **window)  # fmt: skip
    assert [ident(e) for e in newest_first.json["events"]] == served[::-1]
    # the scroll opened before the late events ends as it began
    ids = [ident(e) for e in opened["events"]]
    while opened["count"]:
        opened = (await caller.get(path, scrollId=opened["scrollId"])).json
        ids += [ident(e) for e in opened["events"]]
    assert ids == old
