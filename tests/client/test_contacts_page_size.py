"""``contacts.list(size="max")``: the largest page the server accepts, learnt once.

The reference shows ``size=100``; the vendor documents up to 10,000. A server that refuses
a size answers 409: the client falls back (10,000, 1,000, 100), remembers what was
accepted, and never pays for the refusal twice."""

from __future__ import annotations

import pytest

from asyncwifi import ScaledClock
from asyncwifi.errors import ConflictError, ValidationError
from asyncwifi.testing import Simulator
from tests.client._support import client_for


async def test_a_server_that_accepts_the_documented_maximum_costs_one_request() -> None:
    async with Simulator(clock=ScaledClock(100), contacts=2_500) as sim:
        async with client_for(sim) as api:
            stream = api.contacts.list(size="max")
            got = [c.cid async for c in stream]
            assert api.contacts.largest_page_size == 10_000
        assert len(got) == len(set(got)) == 2_500
        assert stream.requests == 1  # one page, shorter than the total: no closing page
        assert sim.counters.responses_by_status[409] == 0


async def test_a_server_that_follows_the_reference_is_asked_once_then_remembered() -> None:
    async with Simulator(clock=ScaledClock(100), contacts=250, contacts_max_size=100) as sim:
        async with client_for(sim) as api:
            first = [c.cid async for c in api.contacts.list(size="max")]
            assert api.contacts.largest_page_size == 100
            assert sim.counters.responses_by_status[409] == 2  # 10,000 and 1,000 refused
            second = [c.cid async for c in api.contacts.list(size="max")]
        assert len(first) == len(set(first)) == 250
        assert second == first
        assert sim.counters.responses_by_status[409] == 2  # learnt: not paid again


async def test_an_explicit_size_is_never_changed_behind_the_callers_back() -> None:
    async with (
        Simulator(clock=ScaledClock(100), contacts=50, contacts_max_size=100) as sim,
        client_for(sim) as api,
    ):
        with pytest.raises(ConflictError):
            _ = [c async for c in api.contacts.list(size=1_000)]
        assert api.contacts.largest_page_size is None


async def test_a_size_outside_the_documented_range_is_refused_before_any_request() -> None:
    async with Simulator(clock=ScaledClock(100), contacts=5) as sim, client_for(sim) as api:
        for bad in (0, 10_001, True, "100", None):
            with pytest.raises(ValidationError, match="'max' or an integer from 1 to 10,000"):
                api.contacts.list(size=bad)  # type: ignore[arg-type]
        assert sim.counters.by_endpoint.total() == 0
