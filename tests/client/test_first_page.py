"""No page read in vain (issue 42), against the simulator over real HTTP: a stream that asked
no size and no limit starts with a small first page, so a loop that stops early reads no
more, and a full read costs at most one request more and reads the same records; a size
asked (the engine's full reads) is kept from the first page. A stream's last page's
response, its per-call options, and the contact filters checked before any request."""

from __future__ import annotations

from typing import Any

import pytest

from asyncwifi import Lane, ScaledClock
from asyncwifi._resources._events import FIRST_PAGE
from asyncwifi.errors import AsyncWifiError, ValidationError
from tests.client._support import client_for


async def test_a_loop_that_stops_early_reads_the_first_page_only(make_sim: Any) -> None:
    async with make_sim(events=3_000) as sim, client_for(sim) as api:
        async for event in api.events.list():
            assert event.id
            break
        served = sim.counters.objects_served["events"]
    assert served == FIRST_PAGE <= 100


async def test_a_full_read_reads_the_same_records_for_at_most_one_request_more(
    make_sim: Any,
) -> None:
    # a clock 10x real time: a 6 s scroll window, which no loaded machine lets lapse here
    async with make_sim(events=25_000, clock=ScaledClock(10)) as sim, client_for(sim) as api:
        small = api.events.list()
        pages = [page async for page in small.pages()]
        ids = [e.id for page in pages for e in page.items]
        first = [page.count for page in pages]
        served = sim.counters.objects_served["events"]
        whole = api.events.list(size=10_000)
        same = [e.id async for e in whole]
        served_whole = sim.counters.objects_served["events"] - served
    assert first[0] == FIRST_PAGE
    assert max(first) == 10_000
    assert ids == same
    assert len(set(ids)) == 25_000
    assert small.requests <= whole.requests + 1
    # the restart reads again the records of its boundary's millisecond (here: one)
    assert served <= served_whole + 1


async def test_a_size_asked_is_kept_from_the_first_page(make_sim: Any) -> None:
    async with make_sim(events=1_200) as sim, client_for(sim) as api:
        counts = [page.count async for page in api.events.list(size=500).pages()]
        limited = [page.count async for page in api.events.list(limit=300).pages()]
    assert counts == [500, 500, 200]
    assert limited == [300]


async def test_a_stream_shows_its_last_pages_response(make_sim: Any) -> None:
    async with make_sim(contacts=30) as sim, client_for(sim) as api:
        stream = api.contacts.list(size=10)
        assert stream.last_response is None
        got = [c async for c in stream]
    last = stream.last_response
    assert len(got) == 30
    assert last is not None
    assert last.status == 200
    assert last.request_id
    assert last.rate_limit.remaining["minute"] < 60
    assert last.body == b""  # the records are the stream's
    assert last.parse() is None


async def test_a_stream_takes_per_call_options(make_sim: Any) -> None:
    async with make_sim(contacts=12) as sim, client_for(sim) as api:
        stream = api.contacts.list(size=5).with_options(max_wait=30, lane=Lane.BULK, timeout=5)
        assert len([c async for c in stream]) == 12
        with pytest.raises(AsyncWifiError):
            stream.with_options(lane="bulk")  # iterated already
        requests = sim.counters.requests
        with pytest.raises(ValidationError):
            api.contacts.list().with_options(max_wait=-1)
        with pytest.raises(ValidationError):
            api.events.list().with_options(lane="fastest")
        assert sim.counters.requests == requests


@pytest.mark.parametrize("flag", ["has_email", "has_phone", "age_verification", "sort_reverse"])
async def test_a_contact_filter_that_is_not_a_boolean_is_refused(make_sim: Any, flag: str) -> None:
    async with make_sim() as sim, client_for(sim) as api:
        with pytest.raises(ValidationError, match=flag):
            api.contacts.list(**{flag: 1462})
        assert sim.counters.requests == 0


async def test_events_without_a_time_restart_from_the_start_once_a_client(make_sim: Any) -> None:
    # spec §2.4's schema carries no time: the rest is read from the start, the first page's
    # events looked up and skipped (read twice, once), and the next streams start full
    async with make_sim(events=1_500, event_shape="flat") as sim, client_for(sim) as api:
        first = [e.id async for e in api.events.list()]
        once = sim.counters.objects_served["events"]
        again = api.events.list()
        pages = [page.count async for page in again.pages()]
        served = sim.counters.objects_served["events"] - once
    assert len(first) == len(set(first)) == 1_500
    assert once == 1_500 + FIRST_PAGE
    assert pages == [1_500]
    assert served == 1_500
