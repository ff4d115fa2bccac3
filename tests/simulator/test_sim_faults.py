"""Fault injection: seeded and deterministic, scoped, changeable at runtime."""

from __future__ import annotations

import json

import aiohttp
import pytest

from asyncwifi._clock import ScaledClock
from asyncwifi.testing import Faults, Simulator
from tests._virtualclock import VirtualClock
from tests.simulator.conftest import CallerFactory
from tests.simulator.simhelpers import BOUNDARY, Caller

NEW_HOTSPOT = {
    "venueId": "v1", "name": "AP", "routerType": "generic", "ssid": "Guests",
    "country": "IT", "address": "Via Roma 1", "city": "Milano", "zip": "20100",
}  # fmt: skip


async def statuses(caller: Caller, n: int) -> list[int]:
    path = caller.org("/v2/segments/organizations/")
    return [(await caller.get(path)).status for _ in range(n)]


async def test_errors_are_deterministic_for_a_seed(make_caller: CallerFactory) -> None:
    runs = []
    for seed in (7, 7, 8):
        caller = await make_caller(clock=VirtualClock.stepping(BOUNDARY), rate_limit_mode="off")
        caller.sim.faults = Faults(seed=seed, error_rate=0.3)
        runs.append(await statuses(caller, 40))
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]
    assert set(runs[0]) - {200} <= {500, 502, 503, 504}
    assert 4 <= sum(s != 200 for s in runs[0]) <= 20
    bodies = set()
    caller = await make_caller(clock=VirtualClock.stepping(BOUNDARY), rate_limit_mode="off")
    caller.sim.faults = Faults(seed=1, error_rate=1.0, error_statuses=(502,))
    for _ in range(12):
        answer = await caller.get(caller.org("/v2/segments/organizations/"))
        assert answer.status == 502
        assert "X-RateLimit-Remaining-Minute" in answer.headers
        bodies.add(answer.body)
    # empty bodies and the gateway's JSON both occur
    assert b"" in bodies
    assert any(b and json.loads(b)["message"] for b in bodies)
    assert caller.sim.counters.faults["error"] == 12


async def test_faults_apply_only_where_scoped(make_caller: CallerFactory) -> None:
    caller = await make_caller(clock=VirtualClock.stepping(BOUNDARY))
    caller.sim.faults = Faults(error_rate=1.0, methods=("POST", "PUT", "DELETE"))
    assert await statuses(caller, 3) == [200, 200, 200]
    write = await caller.call("POST", "/v3/hotspots", json_body=NEW_HOTSPOT)
    assert write.status >= 500
    caller.sim.faults = Faults(error_rate=1.0, paths=("/v3/hotspots*",))
    assert await statuses(caller, 2) == [200, 200]
    assert (await caller.get("/v3/hotspots/x")).status >= 500
    caller.sim.faults = Faults()  # changed at runtime: back to normal
    created = await caller.call("POST", "/v3/hotspots", json_body=NEW_HOTSPOT)
    assert created.status == 201


async def test_a_dropped_connection_after_a_write_still_wrote(
    make_caller: CallerFactory,
) -> None:
    caller = await make_caller(clock=VirtualClock.stepping(BOUNDARY))
    sim = caller.sim
    before, admitted = len(sim.data.hotspots), sim.counters.admitted
    sim.faults = Faults(drop_rate=1.0, methods=("POST",))
    with pytest.raises(aiohttp.ClientConnectionError):
        await caller.call("POST", "/v3/hotspots", json_body=NEW_HOTSPOT)
    assert len(sim.data.hotspots) == before + 1  # executed, counted, unanswered
    assert sim.counters.admitted == admitted + 1
    assert sim.counters.faults["drop_after"] == 1


async def test_a_connection_dropped_before_the_gateway_costs_nothing(
    make_caller: CallerFactory,
) -> None:
    caller = await make_caller(clock=VirtualClock.stepping(BOUNDARY))
    sim = caller.sim
    admitted = sim.counters.admitted
    sim.faults = Faults(drop_before_rate=1.0)
    with pytest.raises(aiohttp.ClientConnectionError):
        await caller.get(caller.org("/v2/segments/organizations/"))
    assert sim.counters.admitted == admitted
    assert sim.counters.faults["drop_before"] >= 1


async def test_truncated_bodies_are_cut_mid_json(make_caller: CallerFactory) -> None:
    caller = await make_caller(clock=VirtualClock.stepping(BOUNDARY))
    caller.sim.faults = Faults(truncated_rate=1.0)
    answer = await caller.get(caller.org("/v1/organizations/", "/events"), size="50")
    assert answer.status == 200
    assert answer.body.startswith(b'{"generated":')
    with pytest.raises(json.JSONDecodeError):
        json.loads(answer.body)


async def test_html_429s_whatever_the_accept_header(make_caller: CallerFactory) -> None:
    caller = await make_caller(clock=VirtualClock.stepping(BOUNDARY), minute_limit=1)
    caller.sim.faults = Faults(html_429_rate=1.0)
    refused = await caller.get(caller.org("/v2/segments/organizations/"))
    assert refused.status == 429
    assert refused.headers["Content-Type"].startswith("text/html")
    assert b"API rate limit exceeded" in refused.body


async def test_a_latency_spike_outlives_the_scroll_window() -> None:
    clock = ScaledClock(speed=2000)  # the 90 s spike lasts 45 ms
    async with (
        Simulator(clock=clock, events=500) as sim,
        aiohttp.ClientSession() as session,
    ):
        caller = Caller(sim, session)
        assert (await caller.login()).status == 200
        path = caller.org("/v1/organizations/", "/events")
        sim.faults = Faults(spike_rate=1.0, spike=90.0)
        first = (await caller.get(path, enableScroll="true", size="100")).json
        sim.faults = Faults()
        late = (await caller.get(path, scrollId=first["scrollId"])).json
        assert first["count"] == 100
        assert late["count"] == 0  # the id expired while its response was on the way
        assert sim.counters.faults["spike"] == 1
        assert sim.counters.expired_scroll_hits == 1


async def test_inbound_jitter_delays_the_count_not_the_send() -> None:
    clock = VirtualClock.stepping(BOUNDARY)
    async with Simulator(clock=clock) as sim, aiohttp.ClientSession() as session:
        caller = Caller(sim, session)
        sim.faults = Faults(seed=2, inbound_jitter=5.0)
        assert (await caller.login()).status == 200
        assert 0 < sim.admissions[0] - 1_709_294_400.0 <= 5.0
