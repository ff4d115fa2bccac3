"""One simulator serving many organizations (``organizations=N``): each with its own key,
data, tokens and gateway limits, over real HTTP with real clients."""

from __future__ import annotations

import asyncio
import stat
import time
import tomllib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest

from asyncwifi import Client, ScaledClock
from asyncwifi.errors import ConfigurationError, UnauthorizedError
from asyncwifi.testing import Simulator, SimulatorProcess
from tests._virtualclock import VirtualClock
from tests.simulator.simhelpers import BOUNDARY, Caller, jwt_parts

SMALL = {"events": 300, "contacts": 20, "hotspots": 4, "segments": 2}


async def event_ids(sim: Simulator, org: int, **options: object) -> list[str]:
    """Every event id organization ``org`` serves, through a real client."""
    async with sim.tenant(org).client(**options) as api:
        return [e.id or "" async for e in api.events.list(size=1_000)]


async def test_each_organization_has_its_own_credentials_and_data(
    simulator_factory: Callable[..., Simulator],
) -> None:
    async with simulator_factory(organizations=3, seed=5, **SMALL) as sim:
        orgs = sim.organizations
        assert len(orgs) == 3
        for field in range(3):
            assert len({o[field] for o in orgs}) == 3  # ids, keys, secrets all distinct
        assert orgs[0] == (sim.organization, sim.client_key, sim.client_secret)
        served = [await event_ids(sim, i) for i in range(3)]
        for i in range(3):
            assert served[i] == sim.tenant(i).data.event_ids()
            assert len(served[i]) == 300
        assert not set(served[0]) & set(served[1])
        assert not set(served[1]) & set(served[2])
        # organization i is seeded with seed + i: the same data as a simulator of that seed
        assert sim.tenant(2).data.event_ids() == Simulator(seed=7, **SMALL).data.event_ids()
        async with sim.tenant(1).client() as api:
            hotspots = {h.id for h in await api.hotspots.list()}
        assert hotspots == set(sim.tenant(1).data.hotspots)
        assert not hotspots & set(sim.data.hotspots)
        assert sim.tenant(orgs[1].organization) is sim.tenant(1)


async def test_a_token_is_its_organization_s_only(
    simulator_factory: Callable[..., Simulator],
) -> None:
    clock = VirtualClock.stepping(BOUNDARY)
    async with simulator_factory(organizations=2, clock=clock, **SMALL) as sim:
        async with aiohttp.ClientSession() as session:
            a, b = Caller(sim, session, 0), Caller(sim, session, 1)
            assert (await a.login()).status == 200
            assert (await b.login()).status == 200
            assert a.token is not None
            assert jwt_parts(a.token)[1]["organizationId"] == a.organization
            assert (await a.get(a.org("/v1/organizations/", "/events"))).status == 200
            # A's token on B's organization paths: not authorised (spec §7: 403)
            for path in (
                b.org("/v1/organizations/", "/events"),
                b.org("/v3/hotspots/organizations/"),
                b.org("/v2/customers/organizations/"),
            ):
                refused = await a.get(path)
                assert (refused.status, refused.message) == (403, "Access Denied")
            # B's objects are not found with A's token: A sees only its own data
            hotspot = next(iter(sim.tenant(1).data.hotspots))
            assert (await a.get(f"/v3/hotspots/{hotspot}")).status == 404
            assert (await b.get(f"/v3/hotspots/{hotspot}")).status == 200
            # A's key with B's secret is no login
            mixed = {"clientKey": a.client_key, "clientSecret": b.client_secret}
            answer = await a.call("POST", "/v1/sts/login/services", json_body=mixed, auth=False)
            assert answer.status == 401
        # a real client of A pointed at B's organization is refused too
        async with sim.client(organization=sim.organizations[1].organization) as api:
            with pytest.raises(Exception) as caught:
                await api.hotspots.list()
            assert getattr(caught.value, "status", None) == 403
        assert sim.tenant(1).counters.auth_failures == {}


async def test_one_key_spending_its_minute_does_not_slow_another(
    simulator_factory: Callable[..., Simulator],
) -> None:
    async with simulator_factory(
        organizations=2, clock=VirtualClock.stepping(BOUNDARY), **SMALL
    ) as sim:
        async with aiohttp.ClientSession() as session:
            a = Caller(sim, session, 0)
            await a.login()
            answers = [await a.get(a.org("/v2/segments/organizations/")) for _ in range(60)]
            assert [x.status for x in answers] == [200] * 59 + [429]
        # B, at the same instant, with a client that raises rather than waits
        async with sim.tenant(1).client(on_exhausted="raise") as api:
            assert len(await api.segments.list()) == 2
            minute = api.quota.minute
            assert minute is not None
            assert minute.remaining == 58
        a_counts, b_counts = sim.tenant(0).counters, sim.tenant(1).counters
        assert (a_counts.rate_limited, a_counts.admitted) == (1, 60)
        assert (b_counts.rate_limited, b_counts.admitted) == (0, 2)
        assert sim.counters is a_counts  # the single-organization attributes: the first
        async with (
            aiohttp.ClientSession() as session,
            session.get(sim.url("/_simulator/counters"), params={"organization": "1"}) as resp,
        ):
            summary = await resp.json()
        assert (summary["rate_limited"], summary["admitted"]) == (0, 2)


async def test_one_organization_s_spent_day_and_own_limits(
    simulator_factory: Callable[..., Simulator],
) -> None:
    clock = VirtualClock.stepping(BOUNDARY)
    async with simulator_factory(organizations=3, clock=clock, **SMALL) as sim:
        sim.tenant(1).spend_quota(15_000)  # as if another client had used B's day
        sim.tenant(2).set_limits(minute=3)
        async with aiohttp.ClientSession() as session:
            a, b, c = (Caller(sim, session, i) for i in range(3))
            assert (await a.login()).status == 200
            refused = await b.login()
            assert refused.status == 429
            midnight = datetime(2024, 3, 2, tzinfo=UTC).timestamp()  # BOUNDARY's next day
            assert int(refused.headers["Retry-After"]) == midnight - BOUNDARY
            assert [(await c.login()).status for _ in range(4)] == [200, 200, 200, 429]
            ok = await a.get(a.org("/v2/segments/organizations/"))
            assert ok.status == 200
            assert ok.headers["X-RateLimit-Remaining-Day"] == "14998"


async def test_a_revoked_key_fails_its_clients_only(
    simulator_factory: Callable[..., Simulator],
) -> None:
    async with simulator_factory(organizations=2, **SMALL) as sim:
        async with sim.tenant(0).client() as a, sim.tenant(1).client() as b:
            assert await a.segments.list()
            assert await b.segments.list()
            sim.revoke_key(1)
            # B's token is refused, its new login too: the client says so
            with pytest.raises(UnauthorizedError):
                await b.segments.list()
            assert await a.segments.list()
        counters = sim.tenant(1).counters
        assert counters.login_failures >= 1
        assert counters.auth_failures["revoked"] >= 1
        assert sim.tenant(0).counters.login_failures == 0
        sim.tenant(1).restore_key()
        async with sim.tenant(1).client() as b:
            assert await b.segments.list()


async def test_added_events_reach_their_organization_only(
    simulator_factory: Callable[..., Simulator],
) -> None:
    async with simulator_factory(organizations=3, **SMALL) as sim:
        before = [set(await event_ids(sim, i)) for i in range(3)]
        one = sim.add_events(4, organization=1, at="2024-01-10T00:00:00Z")
        assert list(one) == [sim.organizations[1].organization]
        everyone = sim.add_events(2, at="2024-01-11T00:00:00Z")
        assert list(everyone) == [o.organization for o in sim.organizations]
        after = [set(await event_ids(sim, i)) for i in range(3)]
        for i, credentials in enumerate(sim.organizations):
            added = set(everyone[credentials.organization])
            if i == 1:
                added |= set(one[credentials.organization])
            assert after[i] - before[i] == added
            assert len(after[i]) == 300 + len(added)


async def test_a_feed_adds_events_continuously(
    simulator_factory: Callable[..., Simulator],
) -> None:
    clock = ScaledClock(1_000.0)  # a clock second lasts 1 ms
    async with simulator_factory(
        organizations=2, clock=clock, live_events_per_second=0.5, **SMALL
    ) as sim:
        feed = sim.feed
        assert feed is not None
        assert feed.running
        deadline = time.monotonic() + 30.0
        while feed.added < 20 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        added = feed.added
        assert added >= 20
        for i in range(2):
            served = await event_ids(sim, i)
            assert len(served) >= 300 + added  # the feed may have added more meanwhile
        await sim.stop_feed()
        assert not feed.running
        assert sim.feed is None
        with pytest.raises(ConfigurationError):
            sim.start_feed(0.0)


async def test_two_hundred_organizations_start_at_once_and_serve(
    simulator_factory: Callable[..., Simulator],
) -> None:
    started = time.perf_counter()
    sim = simulator_factory(organizations=200, events=300, contacts=50)
    await sim.start()
    elapsed = time.perf_counter() - started
    assert elapsed < 5.0  # measured: about 0.05 s (data is built on an organization's use)
    assert len({o.client_key for o in sim.organizations}) == 200
    served = await event_ids(sim, 199)
    assert served == sim.tenant(199).data.event_ids()
    assert len(served) == 300
    async with (
        aiohttp.ClientSession() as session,
        session.get(sim.url("/_simulator/organizations")) as resp,
    ):
        listed = await resp.json()
    assert [tuple(o.values()) for o in listed] == [tuple(o) for o in sim.organizations]


async def test_requests_naming_no_organization_count_on_the_first(
    simulator_factory: Callable[..., Simulator],
) -> None:
    async with simulator_factory(
        organizations=2, clock=VirtualClock.stepping(BOUNDARY), **SMALL
    ) as sim:
        async with aiohttp.ClientSession() as session:
            caller = Caller(sim, session, 1)
            nobody = {"clientKey": "ck_nobody", "clientSecret": "x"}
            answer = await caller.call("POST", "/v1/sts/login/services", json_body=nobody)
            assert answer.status == 401
            assert (await caller.get(caller.org("/v2/segments/organizations/"))).status == 403
        assert sim.tenant(0).counters.requests == 2
        assert sim.tenant(1).counters.requests == 0


def test_organizations_is_validated() -> None:
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ConfigurationError):
            Simulator(organizations=bad, events=0)  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        Simulator(organizations=2, events=0).tenant(2)


async def test_a_simulator_process_serves_organizations_and_writes_a_fleet_toml(
    tmp_path: Path,
) -> None:
    clock = ScaledClock(100.0)
    fleet = tmp_path / "fleet.toml"
    async with SimulatorProcess(
        clock=clock, organizations=3, events=100, contacts=10, fleet_toml=fleet
    ) as proc:
        orgs = proc.organizations
        assert len(orgs) == 3
        assert orgs[0] == (proc.organization, proc.client_key, proc.client_secret)
        written = tomllib.loads(fleet.read_text())
        assert written["fleet"] == {"base_url": proc.base_url, "allow_http": True}
        assert [tuple(o.values()) for o in written["organizations"]] == [tuple(o) for o in orgs]
        assert stat.S_IMODE(fleet.stat().st_mode) == 0o600  # it holds the secrets

        def client(i: int) -> Client:
            return Client(
                orgs[i].client_key,
                orgs[i].client_secret,
                organization=orgs[i].organization,
                base_url=proc.base_url,
                allow_http=True,
                clock=clock,
            )

        added = await proc.add_events(3, organization=2)
        async with client(2) as api:
            ids = {e.id async for e in api.events.list(date_start="2024-01-01T00:00:00Z")}
        assert len(ids) == 103
        assert set(added[orgs[2].organization]) <= ids
        await proc.revoke_key(1)
        async with client(1) as api:
            with pytest.raises(UnauthorizedError):
                await api.segments.list()
        assert (await proc.counters(organization=orgs[2].organization))["logins"] == 1
        assert (await proc.counters(organization=1))["login_failures"] == 1
        assert (await proc.counters())["requests"] == 0


def test_the_command_line_options_for_organizations() -> None:
    from asyncwifi.cli._simulator_command import simulate_command

    proc = SimulatorProcess(organizations=5, fleet_toml="f.toml", live_events_per_second=2.5)
    params = simulate_command.make_context("simulate", proc.command()[4:]).params
    assert params["organizations"] == 5
    assert params["fleet_toml"] == "f.toml"
    assert params["live_events_per_second"] == 2.5
