"""A record that does not decode is set aside once and counts toward the server's total:
it never makes a contacts scroll think records are missing, nor is it reported twice."""

from __future__ import annotations

from asyncwifi import ScaledClock
from asyncwifi.testing import Simulator
from asyncwifi.testing._api_contacts import modify_contact
from tests.client._support import client_for


async def test_a_bad_contact_is_not_taken_for_a_missing_one() -> None:
    # 200 contacts in pages of 100, one of which does not decode: after the second page,
    # 199 delivered + 1 set aside account for totalCount, so that page is the end
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
        assert stream.requests == 2  # no empty closing page: the total is accounted for
