"""Fault mixes against the simulator, in scaled time: nothing lost, doubled or leaked.

Each case runs an event backfill, a contacts export and interactive calls at once through
one client while the simulator injects one kind of fault (then all of them together), and
checks: every record exactly once, no unhandled exception, no leaked task or socket, no
aiohttp "Unclosed ..." report (warnings are errors), and no request over the limits.
Reproduce with ``.venv/bin/python -m pytest tests/soak -m soak -k faults``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis

from asyncwifi import Client, Limits, RetryPolicy, ScaledClock
from asyncwifi.ratelimit import RedisStore, ThrottleEvent
from asyncwifi.testing import Faults, Simulator
from tests._proxy import CuttableProxy
from tests._windows import most_in_window
from tests.soak._leaks import no_leaks

pytestmark = [pytest.mark.soak, pytest.mark.timeout(1200)]  # long runs past 5 minutes

SPEED = 100.0  # a minute lasts 0.6 s
#: the gateway counts at arrival, the client at send: 5 clock s (50 ms) of slack for lag
LIMITS = Limits(minute_margin=5.0)
DATA = {"seed": 4, "events": 6_000, "contacts": 400}
#: 2025-01-01T00:00:25Z: token revocations (at multiples of 90 s on the clock's time line)
#: come 65 s after the first login, mid-run. A 403 on a token younger than the client's
#: relogin_cooldown (60 s) is taken for a refusal, not a revocation (see the report).
START = 1_735_689_625.0


def clock() -> ScaledClock:
    return ScaledClock(SPEED, start=START)


def client_for(sim: Simulator, **options: Any) -> Client:
    options.setdefault("limits", LIMITS)
    options.setdefault("retry", RetryPolicy(backoff_base=0.5, backoff_max=5.0, max_attempts=8))
    return Client(
        sim.client_key,
        sim.client_secret,
        base_url=sim.base_url,
        organization=sim.organization,
        clock=sim.clock,
        allow_http=True,
        **options,
    )


async def workload(api: Client, sim: Simulator) -> dict[str, Any]:
    """Backfill + export + interactive calls at once; asserts every record exactly once."""

    async def backfill() -> list[str | None]:
        stream = api.events.list(size=100)
        return [e.id async for e in stream]

    async def export() -> list[str | None]:
        return [c.cid async for c in api.contacts.list(size=20, resume=True)]

    async def interactive() -> int:
        rounds = 0
        for _ in range(5):
            assert await api.segments.list()
            assert await api.hotspots.list()
            rounds += 1
        return rounds

    events, contacts, rounds = await asyncio.gather(backfill(), export(), interactive())
    assert events == sim.data.event_ids()  # every event once, in order
    assert Counter(contacts) == Counter(c["cid"] for c in sim.data.contacts)
    assert rounds == 5
    return {"events": len(events), "contacts": len(contacts)}


CASES: dict[str, tuple[Faults, str]] = {
    "5pct_5xx": (Faults(seed=1, error_rate=0.05), "error"),
    "1pct_dropped": (Faults(seed=2, drop_rate=0.01, drop_before_rate=0.01), "drop"),
    "latency_spikes": (Faults(seed=3, spike_rate=0.05, spike=90.0), "spike"),
    "token_revocations": (Faults(revoke_tokens_every=90.0), "revocation"),
    "truncated_json": (Faults(seed=5, truncated_rate=0.05), "truncated"),
    "everything": (
        Faults(
            seed=6,
            error_rate=0.05,
            drop_rate=0.01,
            drop_before_rate=0.01,
            truncated_rate=0.03,
            spike_rate=0.02,
            revoke_tokens_every=90.0,
        ),
        "",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_a_fault_mix_loses_and_leaks_nothing(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    faults, kind = CASES[case]
    with no_leaks(caplog):
        async with (
            Simulator(clock=clock(), faults=faults, **DATA) as sim,
            client_for(sim) as api,
        ):
            await workload(api, sim)
            logins = api.logins
        c = sim.counters
        assert c.rate_limited == 0
        assert c.max_in_clock_minute <= 60
        injected = sum(c.faults.values())
        assert injected > 0
        if kind == "drop":
            assert c.faults["drop_before"] + c.faults["drop_after"] > 0
        elif kind:
            assert c.faults[kind] > 0
        if kind == "revocation":
            assert logins >= 2  # revoked tokens were replaced by new logins


async def test_a_hidden_competitor_is_adapted_to_from_the_headers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # another client spends 20 of the 60 requests a minute on the same key, unseen: the
    # remaining counts in the headers tell
    faults = Faults(seed=7, hidden_competitor=20.0)
    with no_leaks(caplog):
        async with (
            Simulator(clock=clock(), faults=faults, **DATA) as sim,
            client_for(sim) as api,
        ):
            await workload(api, sim)
        c = sim.counters
        assert c.competitor_hits > 0
        assert c.rate_limited <= 3  # adapted: no stream of 429s


def spend_the_minute(sim: Simulator) -> None:
    """Another process on the same key spends the minute: counted at the gateway at once
    (it made 61 requests over HTTP before, which a loaded machine could not fit in the 0.6 s
    a minute lasts here: no 429 came of it)."""
    sim.tenant(sim.organization).spend_quota(60, "minute")


async def test_html_429_bodies_after_a_competitor_spent_the_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # the gateway answers 429 in HTML whatever Accept says: the client must still read the
    # reset from the headers, pause, and lose no position in the scroll
    ours: list[int] = []
    with no_leaks(caplog):
        async with (
            Simulator(clock=clock(), faults=Faults(html_429_rate=1.0), **DATA) as sim,
            client_for(sim, hooks={"response": lambda info: ours.append(info.status)}) as api,
        ):
            stream = api.events.list(size=100)
            ids = []
            async for page in stream.pages():
                ids.extend(e.id for e in page.items)
                if page.number in (5, 40):
                    spend_the_minute(sim)
            assert ids == sim.data.event_ids()
            await workload(api, sim)
        assert sim.counters.faults["html_429"] >= 2
        assert 1 <= ours.count(429) <= 4  # a 429 after each spending, then a pause


@pytest.fixture
async def redis_proxy(redis_url: str) -> AsyncIterator[CuttableProxy]:
    proxy = CuttableProxy(int(redis_url.rsplit(":", 1)[1]))
    await proxy.start()
    yield proxy
    await proxy.close()


@pytest.mark.redis
async def test_a_redis_outage_falls_back_to_a_conservative_limit_never_none(
    redis_url: str, redis_proxy: CuttableProxy, caplog: pytest.LogCaptureFixture
) -> None:
    prefix = f"asyncwifi:test:soak:{uuid.uuid4().hex[:10]}:"
    events: list[ThrottleEvent] = []
    admitted: list[float] = []
    snapshots = []
    with no_leaks(caplog):
        store = RedisStore(
            f"redis://127.0.0.1:{redis_proxy.port}",
            key="faults",
            prefix=prefix,
            use_redis_time=False,
            reconnect_interval=60.0,
            op_timeout=0.5,
        )
        async with (
            # a slower clock than the other mixes: this test counts every sliding minute at
            # arrival, and at 100x (under coverage) event-loop lag alone spans clock seconds
            Simulator(
                clock=ScaledClock(40.0, start=START),
                faults=Faults(seed=8, error_rate=0.05),
                **DATA,
            ) as sim,
            client_for(
                sim,
                rate_store=store,
                hooks={
                    "throttle": events.append,
                    "request": lambda info: admitted.append(info.admitted_at),
                },
            ) as api,
        ):
            stream = api.events.list(size=100)
            ids = []
            async for page in stream.pages():
                ids.extend(e.id for e in page.items)
                if page.number == 10:
                    assert api.quota.store == "redis"
                    redis_proxy.cut()  # Redis goes away mid-run
                if page.number == 25:
                    snapshots.append(api.quota)
                    redis_proxy.up = True  # and comes back
            assert ids == sim.data.event_ids()
            await workload(api, sim)
            final = api.quota
        c = sim.counters
        assert c.rate_limited == 0
        # never no limit, in any sliding minute of the admissions (what the limiter counts:
        # arrivals at the simulator shift with event-loop lag on a starved machine)
        assert most_in_window(admitted, 60.0) <= 60
        kinds = [e.kind for e in events]
        assert "fallback" in kinds
        assert "restored" in kinds
        assert kinds.index("fallback") < kinds.index("restored")
        # the snapshot taken in the outage says so
        assert snapshots[0].store == "redis-fallback"
        assert snapshots[0].degraded
        assert final.store == "redis"
    r = aioredis.Redis.from_url(redis_url)
    keys = [k async for k in r.scan_iter(f"{prefix}*")]
    if keys:
        await r.delete(*keys)
    await r.aclose()
