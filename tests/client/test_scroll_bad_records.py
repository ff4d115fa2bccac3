"""A record that does not decode is set aside once and counts toward the server's total:
it never makes a contacts scroll think records are missing, nor is it reported twice."""

from __future__ import annotations

from asyncwifi import ScaledClock
from asyncwifi.testing import Simulator
from asyncwifi.testing._api_contacts import modify_contact
from tests.client._support import client_for


async def test_a_bad_contact_is_not_taken_for_a_missing_one() -> None:
    # 200 contacts in pages of 100: the second page is full, so the end is an empty
    # continuation checked against totalCount; one contact of it does not decode
    async with Simulator(clock=ScaledClock(100), contacts=200) as sim:
        bad = sim.data.contacts[150]["cid"]
        modify_contact(sim.data, bad, sim.clock.now(), logins="many")
        async with client_for(sim) as api:
            stream = api.contacts.list(size=100, resume=True)
            got = [c.cid async for c in stream]
        assert len(got) == len(set(got)) == 199
        assert bad not in got
        assert len(stream.errors) == 1
        assert bad.encode() in stream.errors[0].raw
        assert stream.total == 200
        assert stream.resumes == 0  # 199 delivered + 1 set aside = the total: the end
        assert stream.requests == 3  # two pages and the empty one that ends the scroll
