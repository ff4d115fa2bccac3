"""The Client over real HTTP against the simulator: every endpoint, every status."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any

import pytest

import asyncwifi
from asyncwifi import (
    HotspotCreate,
    HotspotUpdate,
    Limit,
    Limits,
    Policy,
    RetryPolicy,
    ScaledClock,
    errors,
)
from asyncwifi.ratelimit import ThrottleEvent
from asyncwifi.testing import Faults
from tests.client._support import NO_LIMITS, client_for

pytestmark = pytest.mark.filterwarnings("error")


def new_hotspot(n: int, **extra: Any) -> HotspotCreate:
    fields: dict[str, Any] = {
        "venue_id": "venue-1",
        "name": f"AP {n}",
        "router_type": "aruba",
        "hotspot_identifier": f"ap-ident-{n}",
        "country": "IT",
        "address": "Via Roma 1",
        "city": "Pisa",
        "zip": "56100",
    }
    fields.update(extra)
    return HotspotCreate(**fields)


async def test_every_endpoint(make_sim: Any) -> None:
    async with make_sim(contacts=30, events=400) as sim, client_for(sim) as api:
        # contacts: the scroll list brings every contact once
        contacts = [c async for c in api.contacts.list(size=7)]
        assert sorted(c.cid for c in contacts) == sorted(c["cid"] for c in sim.data.contacts)
        first = contacts[0]
        assert first.cid is not None
        got = await api.contacts.get(first.cid)
        assert got.cid == first.cid
        assert got.email == first.email
        for extra in (api.contacts.events, api.contacts.devices, api.contacts.accountings):
            assert isinstance(await extra(first.cid), dict)
        await api.contacts.update_policies(
            first.cid, [Policy(name="mktgCommunications", accepted=False)]
        )
        updated = await api.contacts.get(first.cid)
        assert {p.name: p.accepted for p in updated.policies or []}["mktgCommunications"] is False
        await api.contacts.delete(first.cid)
        with pytest.raises(errors.NotFoundError):
            await api.contacts.get(first.cid)

        # hotspots: list, get, by identifier, create, update, delete
        listed = await api.hotspots.list()
        assert listed
        one = await api.hotspots.get(listed[0].id or "")
        assert one.id == listed[0].id
        if one.hotspot_identifier:
            by_ident = await api.hotspots.get_by_identifier(one.hotspot_identifier)
            assert by_ident.id == one.id
        created = await api.hotspots.create(new_hotspot(1))
        assert created.hotspot_id
        again = await api.hotspots.get(created.hotspot_id)
        assert again.name == "AP 1"
        await api.hotspots.update(created.hotspot_id, HotspotUpdate(name="AP one", enabled=False))
        assert (await api.hotspots.get(created.hotspot_id)).name == "AP one"
        assert [h.id for h in await api.hotspots.list(name="AP one")] == [created.hotspot_id]
        await api.hotspots.delete(created.hotspot_id)
        assert created.hotspot_id not in {h.id for h in await api.hotspots.list()}

        # segments
        segments = await api.segments.list()
        assert len(segments) == len(sim.data.segments)

        # events: the scroll and the per-customer list
        ids = [e.id async for e in api.events.list(size=100)]
        assert ids == sim.data.event_ids()
        owner = contacts[1].cid
        assert owner is not None
        mine = await api.events.for_customer(owner)
        assert [e.id for e in mine] == sim.data.event_ids(customer=owner)

        # logout revokes the token; the next call logs in again
        assert await api.logout() is True
        assert await api.segments.list()
        assert api.logins == 2


async def test_statuses_map_to_their_exceptions(make_sim: Any) -> None:
    async with make_sim(gone_paths=["/v2/segments/*"]) as sim:
        bad = asyncwifi.Client(
            sim.client_key, "wrong", base_url=sim.base_url, allow_http=True, clock=sim.clock
        )
        async with bad:
            with pytest.raises(errors.UnauthorizedError) as unauthorized:
                await bad.hotspots.list(organization=sim.organization)
        assert unauthorized.value.status == 401
        assert unauthorized.value.request_id

        async with client_for(sim) as api:
            with pytest.raises(errors.NotFoundError):
                await api.hotspots.get("no-such-hotspot")
            with pytest.raises(errors.GoneError):
                await api.segments.list()
            # a router type the client does not know is left to the server, which refuses it
            with pytest.raises(errors.ConflictError) as conflict:
                await api.hotspots.create(new_hotspot(2, router_type="teapot"))
            assert "routerType" in conflict.value.message

        sim.faults = Faults(error_rate=1.0, paths=("/v3/*",))
        retry = RetryPolicy(max_attempts=3, backoff_base=0.01, backoff_max=0.01)
        async with client_for(sim, retry=retry) as api:
            before = sim.counters.by_endpoint.copy()
            with pytest.raises(errors.ServerError):
                await api.hotspots.list()
            assert sum((sim.counters.by_endpoint - before).values()) == 1 + 3  # login + 3 tries


async def test_a_429_is_waited_out_and_nothing_is_sent_before_the_reset(make_sim: Any) -> None:
    async with make_sim(minute_limit=20, fractional_reset=True) as sim:
        sends: list[float] = []
        refusals: list[tuple[float, float]] = []

        def on_request(info: asyncwifi.RequestInfo) -> None:
            sends.append(sim.clock.now())

        def on_throttle(event: ThrottleEvent) -> None:
            if event.kind == "pause" and event.until is not None:
                refusals.append((event.at, event.until))

        competitor = client_for(sim, limits=NO_LIMITS)
        api = client_for(sim, hooks={"request": on_request, "throttle": on_throttle})
        async with api, competitor:
            await sim.clock.sleep(60.0 - sim.clock.now() % 60.0 + 1.0)  # a fresh clock minute
            await api.login()  # the last headers it sees say 19 remain
            for _ in range(15):  # an unseen client on the same key spends most of them
                await competitor.segments.list()
            results = await asyncio.gather(*(api.segments.list() for _ in range(10)))
        assert all(results)
        assert sim.counters.rate_limited >= 1
        assert refusals
        for refused_at, until in refusals:
            early = [t for t in sends if refused_at < t < until - 0.5]
            assert not early, f"{len(early)} request(s) sent before the reset at {until}"
        # the pause came from the first refusal: the others were already in flight
        assert sim.counters.rate_limited <= 10 - 3


async def test_a_reset_too_far_away_raises_instead_of_sleeping(make_sim: Any) -> None:
    async with make_sim(day_limit=3) as sim:
        retry = RetryPolicy(max_rate_limit_wait=60.0)
        limits = Limits(minute=Limit(60, 60.0), day=Limit(100, 86_400.0))
        async with client_for(
            sim, retry=retry, limits=replace(limits, on_exhausted="raise")
        ) as api:
            await api.segments.list()
            await api.segments.list()
            with pytest.raises((errors.RateLimitedError, errors.QuotaExhaustedError)):
                await api.segments.list()


async def test_one_login_for_a_thousand_coroutines(make_sim: Any) -> None:
    async with make_sim(rate_limit_mode="off") as sim:
        async with client_for(sim, limits=replace(NO_LIMITS, max_in_flight=64)) as api:
            await asyncio.gather(
                *(api.hotspots.get(h["id"]) for h in list(sim.data.hotspots.values()) * 84)
            )
        assert sim.counters.logins == 1
        assert sim.counters.requests >= 1000


async def test_token_expiry_and_revocation_mid_run(make_sim: Any) -> None:
    async with make_sim(rate_limit_mode="off", token_ttl=600.0, clock=ScaledClock(1000)) as sim:
        async with client_for(sim, limits=NO_LIMITS) as api:
            for n in range(30):
                await api.segments.list()
                await sim.clock.sleep(50.0)  # 1,500 clock seconds: 2.5 token lifetimes
                if n == 13:
                    sim.revoke_tokens()
        # renewed before exp (no 403 for expiry); one 403 and one relogin for the revocation
        assert sim.counters.auth_failures.get("expired", 0) == 0
        assert 3 <= sim.counters.logins <= 5
        assert sum(sim.counters.auth_failures.values()) == 1


async def test_a_create_under_faults_never_makes_two_hotspots(make_sim: Any) -> None:
    faults = Faults(
        seed=7, drop_rate=0.4, error_rate=0.2, methods=("POST",), paths=("/v3/hotspots",)
    )
    async with make_sim(rate_limit_mode="off", faults=faults) as sim:
        async with client_for(sim, limits=NO_LIMITS) as api:
            outcomes = []
            for n in range(20):
                try:
                    outcomes.append(await api.hotspots.create(new_hotspot(100 + n)))
                except errors.AmbiguousWriteError as exc:  # pragma: no cover - reported below
                    outcomes.append(exc)
        idents = [h.get("hotspotIdentifier") for h in sim.data.hotspots.values()]
        for n in range(20):
            assert idents.count(f"ap-ident-{100 + n}") == 1
        assert all(not isinstance(o, Exception) for o in outcomes)
        assert sim.counters.faults  # faults were really injected


async def test_an_object_quota_is_never_written_past_nor_written_twice(make_sim: Any) -> None:
    async with make_sim(object_limits={"hotspots": 1}) as sim:
        other = client_for(sim)
        async with other, client_for(sim, limits=Limits(on_exhausted="raise")) as first:
            await other.login()  # another process, which will not see the quota go
            await first.hotspots.create(new_hotspot(201))
            sent = sim.counters.requests
            # the headers said the hotspots quota is spent: refused without a request
            with pytest.raises(errors.QuotaExhaustedError) as spent:
                await first.hotspots.create(new_hotspot(202))
            assert spent.value.limit == "hotspots"
            assert sim.counters.requests == sent
            # the other process does not know: the gateway executes its write, then answers
            # a bodyless 429; the lookup to confirm meets the same quota: a clear error
            with pytest.raises(errors.AmbiguousWriteError, match="most likely took effect"):
                await other.hotspots.create(new_hotspot(203))
            assert sim.counters.requests == sent + 2  # the write and one lookup, no retry
        idents = [h.get("hotspotIdentifier") for h in sim.data.hotspots.values()]
        assert idents.count("ap-ident-201") == 1
        assert idents.count("ap-ident-202") == 0
        assert idents.count("ap-ident-203") == 1
        assert sim.counters.object_limited == 2


async def test_validation_spends_no_request(make_sim: Any) -> None:
    async with make_sim() as sim, client_for(sim) as api:
        bad_calls = [
            lambda: api.hotspots.create(new_hotspot(3, country="Italy")),
            lambda: api.hotspots.create(new_hotspot(3, zip=msgspec_unset())),
            lambda: api.hotspots.update("x", {"venueId": "v2"}),
            lambda: api.hotspots.update("x", {"routerType": "meraki"}),
            lambda: api.hotspots.get("  "),
            lambda: api.events.for_customer("c", size=10_001),
            lambda: api.events.for_customer("c", types=["visit", "teleport"]),
            lambda: api.events.for_customer("c", date_start="2026-01-01T00:00:00"),
        ]
        for call in bad_calls:
            with pytest.raises(errors.ValidationError):
                await call()
        with pytest.raises(errors.ValidationError):
            api.events.list(size=0)
        with pytest.raises(errors.ValidationError):
            api.events.list(sort_by="random")
        assert sim.counters.requests == 0


def msgspec_unset() -> Any:
    import msgspec

    return msgspec.UNSET


async def test_logs_and_errors_never_show_the_secret_or_token(
    make_sim: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    faults = Faults(seed=3, error_rate=0.2, revoke_tokens_every=120.0)
    async with make_sim(faults=faults) as sim:
        seen: list[str] = []
        async with client_for(sim) as api:
            for _ in range(15):
                try:
                    await api.segments.list()
                except errors.AsyncWifiError as exc:
                    seen.append(repr(exc) + str(exc))
                await sim.clock.sleep(20.0)
            token = api._tokens._token
            seen.append(repr(api))
            seen.append(repr(api._tokens))
        assert token is not None
        text = caplog.text + "".join(seen)
        assert sim.client_secret not in text
        assert token.value.reveal() not in text
        assert "Bearer" not in text
        assert caplog.records  # the run did log


async def test_lifecycle_errors_are_loud(make_sim: Any) -> None:
    async with make_sim() as sim:
        api = client_for(sim)
        with pytest.raises(errors.ClientStateError, match="not open"):
            await api.segments.list()
        async with api:
            await api.segments.list()
        with pytest.raises(errors.ClientStateError, match="closed"):
            await api.segments.list()
        with pytest.raises(errors.ClientStateError):
            api.open()


def test_plain_http_is_refused_unless_allowed() -> None:
    with pytest.raises(errors.ConfigurationError, match="allow_http"):
        asyncwifi.Client("k", "s", base_url="http://api.example.net")
    asyncwifi.Client("k", "s", base_url="http://127.0.0.1:1", allow_http=True)
    with pytest.raises(errors.ConfigurationError):
        asyncwifi.Client("k", "", base_url="https://api.example.net")


def test_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASYNCWIFI_CLIENT_SECRET", raising=False)
    monkeypatch.setenv("ASYNCWIFI_CLIENT_KEY", "key")
    with pytest.raises(errors.ConfigurationError, match="ASYNCWIFI_CLIENT_SECRET"):
        asyncwifi.Client.from_env()
    monkeypatch.setenv("ASYNCWIFI_CLIENT_SECRET", "super-secret")
    monkeypatch.setenv("ASYNCWIFI_BASE_URL", "https://api.example.net")
    monkeypatch.setenv("ASYNCWIFI_ORGANIZATION", "org-1")
    api = asyncwifi.Client.from_env()
    assert api.organization == "org-1"
    assert "super-secret" not in repr(api)


def test_from_env_reads_the_months_object_allowance(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASYNCWIFI_CLIENT_KEY", "key")
    monkeypatch.setenv("ASYNCWIFI_CLIENT_SECRET", "super-secret")
    monkeypatch.setenv("ASYNCWIFI_BASE_URL", "https://api.example.net")
    monkeypatch.delenv("ASYNCWIFI_ALLOWANCE", raising=False)
    assert asyncwifi.Client.from_env().scheduler.limits.allowance == {}
    monkeypatch.setenv("ASYNCWIFI_ALLOWANCE", "10 access points")
    api = asyncwifi.Client.from_env()
    assert api.scheduler.limits.allowance == {"all": 20_000}  # spec §8: 2,000 each
    assert api.quota.volume.remaining() == 20_000
    # limits given in code win, their own month with them
    given = asyncwifi.Client.from_env(limits=asyncwifi.Limits(month=500))
    assert given.scheduler.limits.allowance == {"all": 500}
    monkeypatch.setenv("ASYNCWIFI_ALLOWANCE", "plenty")
    with pytest.raises(errors.ConfigurationError, match="ASYNCWIFI_ALLOWANCE: 'plenty'"):
        asyncwifi.Client.from_env()


async def test_a_revocation_right_after_login_is_recovered_and_a_refusal_never_storms(
    make_sim: Any,
) -> None:
    async with make_sim() as sim, client_for(sim) as api:
        await api.login()
        sim.revoke_tokens()  # moments after the login
        assert await api.segments.list()
        sim.revoke_tokens()  # and again, moments later
        assert await api.segments.list()
        assert api.logins == 3
        # a real refusal (another tenant): one forced login that does not help, then the
        # 403s are refusals, raised without a login, however many calls hit them
        for _ in range(20):
            with pytest.raises(errors.ForbiddenError):
                await api.segments.list(organization="org-of-someone-else")
        assert api.logins == 4
        await sim.clock.sleep(61.0)  # a cooldown later a 403 may be an expiry again:
        with pytest.raises(errors.ForbiddenError):  # one more login, then the refusal
            await api.segments.list(organization="org-of-someone-else")
        assert api.logins == 5
        assert sim.counters.logins == 5
