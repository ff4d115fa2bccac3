"""Objects are counted exactly (spec §8): every SDK call, over real HTTP, against what the
simulator's API executed.

For each call the client's count (``await api.scheduler.objects()``, per kind) must equal
the simulator's (``sim.counters.objects_served``), and the objects one call added must be
what the simulator counted on that call's endpoint. Where a fault makes the two differ (an
answer the server executed and the client never read), the test says by how much and why:
the client counts what it received, once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from asyncwifi import HotspotCreate, HotspotUpdate, Policy, StreamOptions, errors
from asyncwifi.testing import Simulator
from asyncwifi.testing._api_events import patch_event
from tests.client._support import client_for

pytestmark = pytest.mark.filterwarnings("error")

#: a faster clock for streams whose consumer sleeps through scroll windows
FAST = 400.0
ORG_EVENTS = "GET /v1/organizations/{cid}/events"
CONTACT_LIST = "GET /v2/customers/organizations/{cid}"
HOTSPOT_LIST = "GET /v3/hotspots/organizations/{cid}"


def served(sim: Simulator) -> dict[str, int]:
    """What the simulator's API counted, per kind (a kind it counted none of is not there:
    an empty page or the end of a scroll lists nothing)."""
    return dict(sim.counters.objects_served)


async def same_counts(api: Any, sim: Simulator) -> dict[str, int]:
    """The client's month and day counts per kind, checked against the simulator's."""
    month = await api.scheduler.objects()
    assert month == served(sim)
    assert await api.scheduler.objects(period="day") == month  # one UTC day of clock time
    return dict(month)


async def exchange(
    api: Any, sim: Simulator, call: Callable[[], Awaitable[Any]], endpoint: str, kind: str
) -> tuple[Any, int]:
    """Run ``call``; the objects of ``kind`` it added, equal on both sides and all on
    ``endpoint`` (the simulator's route name)."""
    before_client = await api.scheduler.objects(kind)
    before_server = sim.counters.objects_by_endpoint.copy()
    result = await call()
    added = await api.scheduler.objects(kind) - before_client
    by_endpoint = dict(sim.counters.objects_by_endpoint - before_server)
    assert by_endpoint == ({endpoint: added} if added else {}), endpoint
    assert 0 not in sim.counters.objects_by_endpoint.values()
    await same_counts(api, sim)
    return result, added


def new_hotspot(n: int) -> HotspotCreate:
    return HotspotCreate(
        venue_id="venue-1",
        name=f"AP {n}",
        router_type="aruba",
        hotspot_identifier=f"ap-count-{n}",
        country="IT",
        address="Via Roma 1",
        city="Pisa",
        zip="56100",
    )


async def test_login_and_logout_exchange_no_object(make_sim: Any) -> None:
    async with make_sim() as sim, client_for(sim) as api:
        await api.login()
        assert await api.logout()
        await api.login()
        assert await api.scheduler.objects() == {}
        assert await api.scheduler.objects("all") == 0
        assert sim.counters.logins == 2
        assert sim.counters.tokens_revoked == 1
        assert served(sim) == {}
        assert api.quota.volume.used == 0


async def test_every_contact_call_counts_what_the_server_counted(make_sim: Any) -> None:
    async with make_sim(contacts=130, events=3_000) as sim, client_for(sim) as api:
        contacts, n = await exchange(
            api, sim, lambda: collect(api.contacts.list(size=25)), CONTACT_LIST, "contacts"
        )
        assert n == len(contacts) == 130
        # keep_raw and page iteration count the same records
        pages, n = await exchange(
            api, sim, lambda: collect(api.contacts.list(size=40).pages()), CONTACT_LIST, "contacts"
        )
        assert n == sum(len(p.items) for p in pages) == 130
        assert len(pages) == 4
        _, n = await exchange(
            api,
            sim,
            lambda: collect(
                api.contacts.list(size=60, options=StreamOptions(keep_raw=True)).records()
            ),
            CONTACT_LIST,
            "contacts",
        )
        assert n == 130
        cid = contacts[0].cid
        _, n = await exchange(
            api, sim, lambda: api.contacts.get(cid), "GET /v2/customers/{cid}", "contacts"
        )
        assert n == 1
        for suffix in ("devices", "accountings"):
            got, n = await exchange(
                api,
                sim,
                lambda s=suffix: getattr(api.contacts, s)(cid),  # type: ignore[misc]
                f"GET /v2/customers/{{cid}}/{suffix}",
                "contacts",
            )
            assert n == len(got[suffix])
        # a contact's events are events (the path names them), on both sides
        busy, _ = owner_of_events(sim)
        got, n = await exchange(
            api, sim, lambda: api.contacts.events(busy), "GET /v2/customers/{cid}/events", "events"
        )
        assert n == len(got["events"]) > 0
        events = n
        # writes: the object created, edited or deleted is one
        policies = [Policy(name="mktgCommunications", accepted=True)]
        _, n = await exchange(
            api,
            sim,
            lambda: api.contacts.update_policies(cid, policies),
            "PUT /v1/customers/{cid}/policies",
            "contacts",
        )
        assert n == 1
        _, n = await exchange(
            api, sim, lambda: api.contacts.delete(cid), "DELETE /v1/customers/{cid}", "contacts"
        )
        assert n == 1
        # an error answer carries no object, on either side
        with pytest.raises(errors.NotFoundError):
            await api.contacts.get(cid)
        assert await same_counts(api, sim) == {
            "contacts": 130 * 3 + 1 + n_sub(sim) + 2,
            "events": events,
        }


def n_sub(sim: Simulator) -> int:
    """The devices and accountings the simulator served (one contact's)."""
    by = sim.counters.objects_by_endpoint
    return by["GET /v2/customers/{cid}/devices"] + by["GET /v2/customers/{cid}/accountings"]


def owner_of_events(sim: Simulator) -> tuple[str, int]:
    """A live contact who has events: its cid and the index events refer to it by."""
    for c in sim.data.live_contacts():
        if sim.data.events.select(owner=c["_index"]):
            return c["cid"], c["_index"]
    raise AssertionError("no contact has events")


async def collect(iterable: Any) -> list[Any]:
    return [x async for x in iterable]


async def test_size_max_counts_only_the_pages_the_server_accepted(make_sim: Any) -> None:
    # the server takes 1,000 at most: the 10,000 asked first is a 409 and carries nothing
    async with make_sim(contacts=1_200, contacts_max_size=1_000) as sim, client_for(sim) as api:
        got = await collect(api.contacts.list())
        assert api.contacts.largest_page_size == 1_000
        assert sim.counters.responses_by_status[409] == 1
        assert len(got) == 1_200
        assert await same_counts(api, sim) == {"contacts": 1_200}
        await collect(api.contacts.list())  # learnt: no 409 this time
        assert await same_counts(api, sim) == {"contacts": 2_400}


async def test_every_hotspot_and_segment_call_counts_what_the_server_counted(
    make_sim: Any,
) -> None:
    async with make_sim(hotspots=12, segments=6) as sim, client_for(sim) as api:
        got, n = await exchange(api, sim, api.hotspots.list, HOTSPOT_LIST, "hotspots")
        assert n == len(got) == 12
        page, n = await exchange(
            api, sim, lambda: api.hotspots.page(keep_raw=True), HOTSPOT_LIST, "hotspots"
        )
        assert n == len(page.items) == 12
        # a filter that matches nothing: a page of no object
        _, n = await exchange(
            api, sim, lambda: api.hotspots.list(name="no such AP"), HOTSPOT_LIST, "hotspots"
        )
        assert n == 0
        one = got[0]
        _, n = await exchange(
            api, sim, lambda: api.hotspots.get(one.id), "GET /v3/hotspots/{hotspotId}", "hotspots"
        )
        assert n == 1
        created, n = await exchange(
            api, sim, lambda: api.hotspots.create(new_hotspot(1)), "POST /v3/hotspots", "hotspots"
        )
        assert n == 1
        _, n = await exchange(
            api,
            sim,
            lambda: api.hotspots.get_by_identifier("ap-count-1"),
            "GET /v3/hotspots/identifier/{hotspotIdentifier}",
            "hotspots",
        )
        assert n == 1
        hid = created.hotspot_id
        _, n = await exchange(
            api,
            sim,
            lambda: api.hotspots.update(hid, HotspotUpdate(name="AP one")),
            "PUT /v3/hotspots/{hotspotId}",
            "hotspots",
        )
        assert n == 1
        _, n = await exchange(
            api,
            sim,
            lambda: api.hotspots.delete(hid),
            "DELETE /v3/hotspots/{hotspotId}",
            "hotspots",
        )
        assert n == 1
        segments, n = await exchange(
            api, sim, api.segments.list, "GET /v2/segments/organizations/{cid}", "segments"
        )
        assert n == len(segments) == 6
        _, n = await exchange(
            api, sim, api.segments.page, "GET /v2/segments/organizations/{cid}", "segments"
        )
        assert n == 6
        assert await same_counts(api, sim) == {"hotspots": 12 * 2 + 5, "segments": 12}


@pytest.mark.parametrize("shape", ["flat", "nested", "dated"])
async def test_an_events_scroll_counts_every_record_served_a_broken_one_too(
    make_sim: Any, shape: str
) -> None:
    async with make_sim(events=1_050, event_shape=shape) as sim, client_for(sim) as api:
        patch_event(sim.data.events, 7, visit="broken")  # does not decode as an Event
        stream = api.events.list(size=200)
        got = await collect(stream)
        assert len(got) == 1_049
        assert len(stream.errors) == 1
        assert stream.requests >= 6  # five full pages, a short one, and the end
        assert await same_counts(api, sim) == {"events": 1_050}
        assert sim.counters.objects_by_endpoint[ORG_EVENTS] == 1_050
        # the ids alone, and with their bytes: each record is an object all the same
        keys = api.events.keys(size=500, options=StreamOptions(keep_raw=True))
        assert len(await collect(keys.records())) == 1_050
        assert await same_counts(api, sim) == {"events": 2_100}


async def test_one_customers_events_count_what_was_returned(make_sim: Any) -> None:
    async with make_sim(events=2_000) as sim, client_for(sim) as api:
        owner, index = owner_of_events(sim)
        path = "GET /v1/organizations/{cid}/customers/{id}/events"
        got, n = await exchange(api, sim, lambda: api.events.for_customer(owner), path, "events")
        assert n == len(got) > 0
        # the service user has no events: nothing exchanged
        _, n = await exchange(
            api, sim, lambda: api.events.for_customer(sim.user_id), path, "events"
        )
        assert n == 0
        # a page holding a record that does not decode raises, and still counted it
        first = sim.data.events.select(owner=index)[0]
        patch_event(sim.data.events, first, visit="broken")
        with pytest.raises(errors.DecodeError):
            await api.events.for_customer(owner)
        assert await same_counts(api, sim) == {"events": 2 * len(got)}


async def test_a_value_in_the_path_does_not_change_the_kind_counted(make_sim: Any) -> None:
    import msgspec

    async with make_sim(hotspots=2) as sim, client_for(sim) as api:
        for ident in ("events-hall", "events/lobby"):
            create = msgspec.structs.replace(new_hotspot(0), hotspot_identifier=ident)
            await api.hotspots.create(create)
            await api.hotspots.get_by_identifier(ident)
        assert await same_counts(api, sim) == {"hotspots": 4}
