"""Scroll streams behind gateways that do not count in fixed UTC minutes (DESIGN "The
simulator is not the API"): a sliding window (strict: 60 in any 60 s), and fixed windows
on a gateway clock 23 s off ours (skewed).

An events stream and a contacts stream at once on one client, with the documented limits
on both sides (60 a minute) and about 80 requests between them, so that the minute binds
and the two scrolls must be kept alive while they wait; over real HTTP at 50x (the two
clock minutes last about 1.5 s). Every record once and in order, 0 x 429, no lapse, no
resume, and one request per page: the floor, no closing page needed.
"""

from __future__ import annotations

import asyncio

import pytest

from asyncwifi import ScaledClock
from asyncwifi.testing import Simulator
from tests.client._support import client_for

#: clock seconds per real second: event-loop lag of tens of ms on a loaded 2-core machine
#: stays around the client's 1 s margin (20 ms here), and a scroll id lives 1.2 real s
SPEED = 50.0
#: 15 s before a UTC minute: the first burst lands late in a minute, where a client counting
#: in windows aligned on its own clock would send the next one a few seconds later
START = 1_709_294_400.0 - 15.0
#: 4,050 events: the last page is short, which proves the end (a full one is followed by an
#: empty page that an early-expired id would also give: a resume settles it, 2 requests)
EVENTS, EVENTS_PAGE = 4_050, 100
#: contact pages carry ``totalCount``: the last page ends the scroll even when full
CONTACTS, CONTACTS_PAGE = 2_000, 50


@pytest.mark.parametrize(
    ("model", "shape"), [("sliding", "flat"), ("sliding", "nested"), ("skewed", "nested")]
)
async def test_two_streams_behind_the_gateway_deliver_everything_unrefused_a_page_a_request(
    model: str, shape: str
) -> None:
    server = Simulator(
        clock=ScaledClock(SPEED, start=START),
        events=EVENTS,
        contacts=CONTACTS,
        event_shape=shape,
        rate_limit_mode=model,  # the documented 60 a minute, 15,000 a day
    )
    # the client's default limits: the same 60 a minute, 15,000 a day
    async with server, client_for(server) as api:
        events = api.events.list(size=EVENTS_PAGE)
        contacts = api.contacts.list(size=CONTACTS_PAGE)

        async def event_ids() -> list[str | None]:
            return [e.id async for e in events]

        async def cids() -> list[str]:
            return [c.cid async for c in contacts]

        got_events, got_contacts = await asyncio.gather(event_ids(), cids())
    assert got_events == server.data.event_ids()
    assert sorted(got_contacts) == sorted(c["cid"] for c in server.data.contacts)
    assert len(set(got_contacts)) == CONTACTS

    counters = server.counters
    assert counters.rate_limited == 0
    assert counters.expired_scroll_hits == 0  # both scrolls kept alive while waiting
    assert events.resumes == contacts.resumes == 0
    # a request per page, and no closing request (see EVENTS and CONTACTS); nothing else
    # reached the server but the login
    assert events.requests == -(-EVENTS // EVENTS_PAGE)
    assert contacts.requests == CONTACTS // CONTACTS_PAGE
    assert counters.requests == 1 + events.requests + contacts.requests
    # the limit bound: more than a minute's worth of requests had to wait for room
    assert counters.admitted > 60
