"""The month's object allowance is a gate, not a tripwire (spec §8; issue 39): a page is
asked for at no more than what is left, across concurrent streams, and never one object
over; at the allowance a stream raises or waits for the 1st as ``Limits.on_exhausted``
says, and a page fetched ahead is counted when it is served, even if nobody reads it.

Each test runs the client over real HTTP against the simulator, whose served objects
(``sim.counters.objects_served``) are the truth the client's counts must equal.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from asyncwifi import Limits
from asyncwifi.errors import QuotaExhaustedError, ScrollExpiredError
from asyncwifi.testing import Faults, Simulator
from tests._virtualclock import VirtualClock
from tests.client._support import client_for
from tests.client.test_object_counts import ORG_EVENTS, owner_of_events, same_counts, served

pytestmark = pytest.mark.filterwarnings("error")

SHAPES = ("nested", "flat", "dated")
RAISE_AT_500 = Limits(month=500, on_exhausted="raise")


async def drain(stream: Any, got: list[Any]) -> BaseException | None:
    """Read ``stream`` into ``got``; the error that ended it, if any."""
    try:
        async for item in stream:
            got.append(item)
    except (QuotaExhaustedError, ScrollExpiredError) as exc:
        return exc
    return None


@pytest.mark.parametrize("shape", SHAPES)
async def test_an_allowance_of_500_serves_500_through_a_stream_at_its_default_size(
    make_sim: Any, shape: str
) -> None:
    async with (
        make_sim(events=5_000, event_shape=shape) as sim,
        client_for(sim, limits=RAISE_AT_500) as api,
    ):
        got: list[Any] = []
        spent = await drain(api.events.list(), got)  # 100 first, then 10,000 asked: 400 sent
        assert isinstance(spent, QuotaExhaustedError)
        assert spent.limit == "month"
        assert "500 for every kind of object; 500 exchanged" in spent.message
        assert served(sim) == {"events": 500}  # was 5,000: the whole first page
        # the small first page (issue 42), then one restart at what is left: from the time
        # cursor, reading its boundary's event again; without a time, from the start
        reread = 100 if shape == "flat" else 1
        assert len(got) == len({e.id for e in got}) == 500 - reread
        assert await same_counts(api, sim) == {"events": 500}
        assert sim.counters.by_endpoint[ORG_EVENTS] == 2  # the next page was never asked
        assert api.quota.volume.remaining() == 0


@pytest.mark.parametrize("shape", SHAPES)
async def test_less_than_a_page_left_restarts_a_timed_scroll_smaller_or_stops_it(
    make_sim: Any, shape: str
) -> None:
    limits = Limits(month={"events": 500}, on_exhausted="raise")
    async with (
        make_sim(events=2_000, event_shape=shape) as sim,
        client_for(sim, limits=limits) as api,
    ):
        got: list[Any] = []
        stream = api.events.list(size=200)
        spent = await drain(stream, got)
        assert isinstance(spent, QuotaExhaustedError)
        assert spent.limit == "month:events"
        assert len(got) == len({e.id for e in got})
        if shape == "flat":
            # no time to restart from: a continuation cannot ask for less than its 200
            assert served(sim) == {"events": 400}
            assert "100 left: fewer than the 200 a scroll's next page needs" in spent.message
        else:
            # the scroll ends and a new one from the time cursor asks for the last 100 (the
            # events at that time, delivered already, are read again: objects all the same)
            assert served(sim) == {"events": 500}
            assert 400 < len(got) <= 500
            assert sim.counters.scrolls_started == 2
        assert await same_counts(api, sim) == served(sim)


async def test_four_concurrent_streams_serve_500_together(make_sim: Any) -> None:
    async with make_sim(events=8_000) as sim, client_for(sim, limits=RAISE_AT_500) as api:
        days = ("2024-01-01", "2024-01-08", "2024-01-15", "2024-01-22", "2024-01-29")
        gots: list[list[Any]] = [[] for _ in range(4)]
        streams = [
            api.events.list(date_start=f"{days[i]}T00:00:00Z", date_end=f"{days[i + 1]}T00:00:00Z")
            for i in range(4)
        ]
        ends = await asyncio.gather(*(drain(s, g) for s, g in zip(streams, gots, strict=True)))
        assert all(isinstance(end, QuotaExhaustedError) for end in ends)  # was 20,000 served
        assert served(sim) == {"events": 500}
        # each stream's small first page, then a restart from its time cursor that reads
        # its boundary's event again (issue 42): at most one object each
        assert 500 - 4 <= sum(map(len, gots)) <= 500
        assert all(len(got) == len({e.id for e in got}) for got in gots)
        assert await same_counts(api, sim) == {"events": 500}


async def test_a_customers_events_ask_for_no_more_than_is_left(make_sim: Any) -> None:
    limits = Limits(month={"events": 3}, on_exhausted="raise")
    async with make_sim(events=2_000) as sim, client_for(sim, limits=limits) as api:
        owner, _ = owner_of_events(sim)
        got = await api.events.for_customer(owner, size=100)
        assert len(got) <= 3
        assert await same_counts(api, sim) == {"events": len(got)}


async def test_a_get_at_the_allowance_is_not_sent(make_sim: Any) -> None:
    limits = Limits(month={"contacts": 2}, on_exhausted="raise")
    async with make_sim(contacts=5) as sim, client_for(sim, limits=limits) as api:
        cids = [c["cid"] for c in sim.data.contacts[:3]]
        await api.contacts.get(cids[0])
        await api.contacts.get(cids[1])
        with pytest.raises(QuotaExhaustedError, match="2 for contacts; 2 exchanged"):
            await api.contacts.get(cids[2])
        assert sim.counters.by_endpoint["GET /v2/customers/{cid}"] == 2
        assert await same_counts(api, sim) == {"contacts": 2}


async def test_a_page_fetched_ahead_and_abandoned_is_counted_when_served(
    make_sim: Any,
) -> None:
    async with make_sim(events=1_000) as sim, client_for(sim) as api:
        # the answers come 30 clock seconds after the server ran the request (0.3 s real)
        stream = api.events.list(size=100)
        pages = aiter(stream.pages())
        first = await anext(pages)
        assert len(first.items) == 100
        sim.faults = Faults(latency=30.0)
        while served(sim).get("events", 0) < 200:  # the next page is served, on its way
            await asyncio.sleep(0.005)
        await pages.aclose()  # the consumer leaves before it comes
        await stream.aclose()
        assert served(sim) == {"events": 200}
        assert await same_counts(api, sim) == {"events": 200}  # was 100


# -- on_exhausted="wait": the stream waits for the 1st, and loses nothing ------------------

NOV_30 = datetime(2026, 11, 30, 22, 0, tzinfo=UTC).timestamp()
#: November's last hours, then four whole months
FIRSTS = [datetime(2026 + m // 12, m % 12 + 1, 1, tzinfo=UTC).timestamp() for m in range(11, 16)]
MONTHS = list(zip([NOV_30, *FIRSTS[:-1]], FIRSTS, strict=True))


@pytest.mark.parametrize("shape", ["nested", "dated"])
def test_a_stream_waits_for_the_first_and_loses_nothing(shape: str) -> None:
    clock = VirtualClock(NOV_30)
    limits = Limits(month={"events": 500}, on_exhausted="wait")

    async def main() -> None:
        async with (
            Simulator(clock=clock, events=2_000, event_shape=shape) as sim,
            client_for(sim, limits=limits) as api,
        ):
            arrivals: list[tuple[float, int]] = []
            ids: list[str] = []
            async for page in api.events.list(size=1_000).pages():
                arrivals.append((clock.now(), len(page.items)))
                ids += [e.id for e in page.items]
            assert len(ids) == len(set(ids)) == 2_000  # every event, once
            # 500 a month: November's, then on each 1st at once (a resume by time reads
            # the events at its time again: a few objects a month)
            by_month = [sum(n for t, n in arrivals if a <= t < b) for a, b in MONTHS]
            assert by_month[0] == 500
            assert all(480 < n <= 500 for n in by_month[1:-1])
            assert sum(by_month) == 2_000
            firsts = {m for m, (a, _) in enumerate(MONTHS) for t, _ in arrivals if a <= t < a + 60}
            assert firsts == set(range(len(MONTHS)))
            # what was served, month by month, is what the client counted
            assert await api.scheduler.objects("events") <= 500
            total = served(sim)["events"]
            assert 2_000 < total <= 500 * len(MONTHS)

    clock.run(main())


async def test_a_close_waits_for_an_abandoned_answer_only_so_long(
    make_sim: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that does not answer cannot hold a stop: the stream's and the client's
    close wait at most ``SETTLE_TIMEOUT`` in all for a page fetched ahead, then let it go."""
    monkeypatch.setattr("asyncwifi._abandoned.SETTLE_TIMEOUT", 1.0)
    async with make_sim(events=1_000) as sim:
        api = client_for(sim)
        async with api:
            stream = api.events.list(size=100)
            pages = aiter(stream.pages())
            await anext(pages)
            sim.faults = Faults(latency=1e6)  # the next answer never comes
            while served(sim).get("events", 0) < 200:
                await asyncio.sleep(0.005)
            await pages.aclose()
            loop = asyncio.get_running_loop()
            begun = loop.time()
            async with asyncio.timeout(10):  # unbounded, it waited for ever
                await stream.aclose()
        took = loop.time() - begun  # the stream's close, then the client's
        assert took < 1.9  # one wait, not one per close
