"""Objects counted through faults (spec §8): retries, ambiguous writes, expired scrolls.

The client counts what it received, once: a page fetched again after its answer was lost
is counted once. The simulator counts what its API executed, so where an answer was lost
*after* execution (a dropped connection, a truncated body) the server counted it twice:
each test says what the server counted and why.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from asyncwifi import HotspotUpdate, Limits, ScaledClock, StreamOptions, errors
from asyncwifi.testing import Faults, Simulator
from tests.client._support import NO_LIMITS, client_for
from tests.client.test_object_counts import (
    FAST,
    HOTSPOT_LIST,
    ORG_EVENTS,
    new_hotspot,
    same_counts,
    served,
)
from tests.sync.conftest import GearedClock

pytestmark = pytest.mark.filterwarnings("error")

#: each fault, and whether the server executed the request it spoiled (and so counted it)
FAULTS = {
    "drop_before": (Faults(drop_before_rate=1.0), False),
    "drop_after": (Faults(drop_rate=1.0), True),
    "truncated": (Faults(truncated_rate=1.0), True),
    "error": (Faults(error_rate=1.0), False),
}


def once(sim: Simulator, fault: Faults, *paths: str, methods: tuple[str, ...] = ()) -> Any:
    """Put ``fault`` on ``paths`` now; the retry hook that lifts it (the next try goes)."""
    sim.faults = Faults(
        drop_before_rate=fault.drop_before_rate,
        drop_rate=fault.drop_rate,
        truncated_rate=fault.truncated_rate,
        error_rate=fault.error_rate,
        paths=paths,
        methods=methods,
    )

    def lift(_: object) -> None:
        sim.faults = Faults()

    return lift


@pytest.mark.parametrize("name", sorted(FAULTS))
async def test_a_read_retried_after_a_fault_is_counted_once(make_sim: Any, name: str) -> None:
    fault, executed = FAULTS[name]
    async with make_sim(hotspots=12) as sim:
        lift = once(sim, fault, "/v3/hotspots/organizations/*")
        async with client_for(sim, hooks={"retry": lift}) as api:
            got = await api.hotspots.list()
            assert len(got) == 12
            assert await api.scheduler.objects() == {"hotspots": 12}
        # one pipeline retry; a connection lost on a reused keep-alive connection is sent
        # once more by aiohttp itself, so the fault may be met twice (see the last test)
        spoiled = sim.counters.faults[name]
        assert 1 <= spoiled <= (2 if name.startswith("drop") else 1)
        # the server counted each spoiled answer too when its API had run
        assert served(sim) == {"hotspots": 12 * (1 + spoiled * executed)}
        assert sim.counters.objects_by_endpoint[HOTSPOT_LIST] == 12 * (1 + spoiled * executed)


@pytest.mark.parametrize("name", ["drop_after", "truncated"])
async def test_a_scroll_page_fetched_again_is_counted_once(make_sim: Any, name: str) -> None:
    fault, _ = FAULTS[name]
    async with make_sim(events=1_000) as sim:
        lifts: list[Any] = []
        async with client_for(sim, hooks={"retry": lambda info: lifts.pop()(info)}) as api:
            stream = api.events.list(size=100, options=StreamOptions(max_buffered=1))
            pages = aiter(stream.pages())
            ids = [e.id for e in (await anext(pages)).items]
            # the next page asked for (one of the first four: all full) fails once
            lifts.append(once(sim, fault, "/v1/organizations/*/events"))
            ids += [e.id async for p in pages for e in p.items]
            assert len(ids) == len(set(ids)) == 1_000
            assert not lifts  # the page was fetched again by the pipeline
            counted = await api.scheduler.objects("events")
        # the last page is full: the end is proved from the time cursor, which reads the
        # events at the last time again (each is exchanged again, on both sides)
        assert 1_000 < counted < 1_100
        # the server executed each spoiled request: 100 events more there each time
        spoiled = sim.counters.faults[name]
        assert served(sim) == {"events": counted + 100 * spoiled}


async def test_an_ambiguous_create_confirmed_by_its_lookup_counts_both(make_sim: Any) -> None:
    async with make_sim(hotspots=3) as sim:
        once(sim, Faults(drop_rate=1.0), "/v3/hotspots", methods=("POST",))
        async with client_for(sim) as api:
            created = await api.hotspots.create(new_hotspot(7))  # dropped after it was made
            assert created.hotspot_id
            # the create (once) and the lookup that found it: two objects on each side
            assert sim.counters.faults["drop_after"] == 1
            assert await same_counts(api, sim) == {"hotspots": 2}
            by = sim.counters.objects_by_endpoint
            assert by["POST /v3/hotspots"] == 1
            assert by["GET /v3/hotspots/identifier/{hotspotIdentifier}"] == 1


async def test_a_create_that_did_not_happen_is_looked_up_then_counted_once(
    make_sim: Any,
) -> None:
    async with make_sim(hotspots=3) as sim:
        lift = once(sim, Faults(drop_before_rate=1.0), "/v3/hotspots", methods=("POST",))
        async with client_for(sim, hooks={"retry": lift}) as api:
            await api.hotspots.create(new_hotspot(8))
            # the lookup found nothing (a 404: no object), the second create made it
            assert await same_counts(api, sim) == {"hotspots": 1}
        assert sim.counters.by_endpoint["POST /v3/hotspots"] == 2


@pytest.mark.parametrize("method", ["PUT", "DELETE"])
async def test_an_ambiguous_update_or_delete_counts_its_object_and_its_lookup(
    make_sim: Any, method: str
) -> None:
    async with make_sim(hotspots=3) as sim, client_for(sim) as api:
        hid = (await api.hotspots.list())[0].id
        once(sim, Faults(drop_rate=1.0), "/v3/hotspots/*", methods=(method,))
        if method == "PUT":
            await api.hotspots.update(hid, HotspotUpdate(name="renamed"))
        else:
            await api.hotspots.delete(hid)
        # the list (3), the write (1) and the lookup that confirmed it (1)
        assert await api.scheduler.objects() == {"hotspots": 5}
        # aiohttp sends an idempotent request lost on a reused connection once more by
        # itself: a PUT it repeated ran twice (a repeated DELETE meets a 404: no object)
        writes = sim.counters.by_endpoint[f"{method} /v3/hotspots/{{hotspotId}}"]
        assert served(sim) == {"hotspots": 5 + (writes - 1) * (method == "PUT")}


async def test_an_ambiguous_contact_delete_counts_the_write_not_the_404(make_sim: Any) -> None:
    async with make_sim(contacts=5) as sim, client_for(sim) as api:
        cid = sim.data.contacts[0]["cid"]
        once(sim, Faults(drop_rate=1.0), "/v1/customers/*", methods=("DELETE",))
        result = await api.contacts.delete(cid)
        assert result.get("verified") is True
        assert await same_counts(api, sim) == {"contacts": 1}
        assert sim.counters.responses_by_status[404] == 1  # the lookup: gone


async def test_a_write_refused_for_sure_is_not_counted(make_sim: Any) -> None:
    async with make_sim() as sim, client_for(sim, limits=Limits(on_exhausted="raise")) as api:
        with pytest.raises(errors.ConflictError):
            await api.hotspots.create(msgspec.structs.replace(new_hotspot(9), router_type="tea"))
        with pytest.raises(errors.NotFoundError):
            await api.hotspots.update("0" * 24, HotspotUpdate(name="none"))
        assert await same_counts(api, sim) == {}


async def test_a_write_that_could_not_be_checked_is_counted_by_the_server_only(
    make_sim: Any,
) -> None:
    # the gateway runs the write, then answers a bodyless 429 (its object quota is spent),
    # and the lookup alike: the client cannot know, raises, and counts nothing; the server
    # counted the hotspot it created and the one the lookup read
    async with make_sim(object_limits={"hotspots": 1}) as sim, client_for(sim) as api:
        await api.login()  # before the quota is spent elsewhere: this client cannot know
        sim.object_limiter.settle(sim.clock.now(), {}, {"hotspots": 1})
        with pytest.raises(errors.AmbiguousWriteError, match="most likely took effect"):
            await api.hotspots.create(new_hotspot(10))
        assert sim.counters.object_limited == 2  # the write and its lookup
        assert await api.scheduler.objects() == {}
        assert served(sim) == {"hotspots": 2}


@pytest.mark.parametrize("shape", ["flat", "nested", "dated"])
async def test_an_expired_events_scroll_counts_each_page_it_read_again(
    make_sim: Any, shape: str
) -> None:
    # ids expire after 10 s; the consumer takes 40 s a page: the stream resumes, and what
    # a resume reads again is exchanged again (spec §8 counts every record returned)
    make = make_sim(events=1_200, clock=ScaledClock(FAST), event_shape=shape, scroll_ttl=10.0)
    async with make as sim, client_for(sim, limits=NO_LIMITS) as api:
        stream = api.events.list(size=200, options=StreamOptions(max_buffered=1, spill_budget=0))
        ids: list[str | None] = []
        async for page in stream.pages():
            ids.extend(e.id for e in page.items)
            await sim.clock.sleep(40.0)
        assert sorted(ids) == sorted(sim.data.event_ids())
        assert stream.resumes >= 1
        assert sim.counters.expired_scroll_hits >= 1
        counted = await same_counts(api, sim)
        assert counted["events"] == sim.counters.objects_by_endpoint[ORG_EVENTS] >= 1_200


async def test_a_contact_scroll_resumed_counts_its_rescan(make_sim: Any) -> None:
    # a scroll's 20 s last 10 real seconds while it reads (a loaded machine cannot lapse
    # the re-scan); the consumer is away 150 s after each page, in no real time: it lapses
    clock = GearedClock(2.0)
    make = make_sim(contacts=60, clock=clock, scroll_ttl=20.0)
    async with make as sim, client_for(sim) as api:
        stream = api.contacts.list(size=10, resume=True, options=StreamOptions(max_buffered=1))
        cids: list[str] = []
        async for page in stream.pages():
            cids.extend(c.cid for c in page.items)
            clock.jump(150.0)
        assert sorted(cids) == sorted(c["cid"] for c in sim.data.contacts)
        assert stream.resumes >= 1
        assert (await same_counts(api, sim))["contacts"] > 60  # the re-scan read some again


async def test_a_stream_closed_early_counts_the_page_it_fetched_ahead(make_sim: Any) -> None:
    async with make_sim(events=3_000) as sim, client_for(sim, limits=NO_LIMITS) as api:
        async with api.events.list(size=100, options=StreamOptions(max_buffered=1)) as stream:
            async for _page in stream.pages():
                while stream.pages_fetched < 2:  # the next page is fetched ahead, unread
                    await sim.clock.sleep(1.0)
                break
        counted = await same_counts(api, sim)
        assert counted["events"] == 100 * stream.pages_fetched >= 200


async def test_a_page_cut_off_by_closing_the_stream_is_counted_by_the_server_only(
    make_sim: Any,
) -> None:
    # the answer to the page in flight is delayed after the API ran; closing the stream
    # then drops it: the server counted its 100 events, the client never saw them
    async with make_sim(events=3_000) as sim, client_for(sim, limits=NO_LIMITS) as api:
        async with api.events.list(size=100, options=StreamOptions(max_buffered=1)) as stream:
            async for _page in stream.pages():
                while stream.pages_fetched < 2:
                    await sim.clock.sleep(1.0)
                sim.faults = Faults(latency=3_600.0)  # the keep-alive's fetch of page 3
                while sim.counters.objects_by_endpoint[ORG_EVENTS] < 300:
                    await sim.clock.sleep(1.0)
                break
        assert stream.pages_fetched == 2
        assert await api.scheduler.objects() == {"events": 200}
        assert served(sim) == {"events": 300}


async def test_a_lost_idempotent_request_is_sent_once_per_admission(make_sim: Any) -> None:
    async with make_sim(hotspots=3) as sim:
        admitted: list[object] = []
        lifts: list[Any] = []
        hooks = {"retry": lambda info: lifts.pop()(info), "request": admitted.append}
        async with client_for(sim, hooks=hooks) as api:
            await api.hotspots.list()  # the login and a list: a warm connection to reuse
            lifts.append(once(sim, Faults(drop_rate=1.0), "/v3/hotspots/organizations/*"))
            await api.hotspots.list()  # lost, retried once by the pipeline
        assert len(admitted) == 4
        assert sim.counters.requests == len(admitted)  # today: 5, aiohttp sent one more
