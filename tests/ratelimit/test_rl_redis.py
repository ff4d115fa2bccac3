"""RedisStore against the real Redis on 127.0.0.1:6379: shared budgets, pauses, fallback.

Scaled time throughout (a minute lasts well under a second); assertions are on the clock's
time line (admission times), never on wall-clock durations.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio as aioredis

from asyncwifi._clock import ScaledClock, SystemClock
from asyncwifi.errors import QuotaExhaustedError
from asyncwifi.ratelimit import Limit, Limits, RedisStore, Scheduler, ThrottleEvent
from tests._proxy import CuttableProxy
from tests.ratelimit.rlhelpers import max_in_fixed, max_in_sliding

pytestmark = pytest.mark.redis

URL = "redis://127.0.0.1:6379"
ROOT = Path(__file__).resolve().parents[2]


def store(prefix: str, key: str = "acct", **kw: Any) -> RedisStore:
    kw.setdefault("use_redis_time", False)
    return RedisStore(URL, key=key, prefix=prefix, **kw)


async def take_all(sched: Scheduler, n: int, out: list[float]) -> None:
    async def one() -> None:
        async with sched.slot() as p:
            out.append(p.sent_at)

    await asyncio.gather(*(one() for _ in range(n)))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def test_several_schedulers_share_one_budget(prefix: str) -> None:
    clock = ScaledClock(500)
    lim = Limits(minute=Limit(10, 60.0), day=Limit(1_000, 86_400.0))
    scheds = [
        Scheduler(replace(lim, max_in_flight=None), clock=clock, store=store(prefix))
        for _ in range(3)
    ]
    sent: list[float] = []
    await asyncio.gather(*(take_all(s, 20, sent) for s in scheds))
    snap = scheds[0].quota
    for s in scheds:
        await s.aclose()
    assert len(sent) == 60
    assert max_in_sliding(sent, 61.0) == 10  # bursts of N, never N + 1
    assert max_in_fixed(sent, 60.0) <= 10
    assert snap.store == "redis"
    assert snap.degraded is None
    r = aioredis.Redis.from_url(URL)
    day_key = f"{prefix}{{acct}}:day"
    assert await r.zcard(day_key) == 60
    ttl = await r.pttl(day_key)
    assert 0 < ttl <= (86_460 + 1) * 1000  # keys expire on their own
    await r.aclose()


async def test_redis_time_is_the_time_line_by_default(prefix: str) -> None:
    """With Redis' own clock, Redis' log itself never holds N + 1 in a window."""
    lim = Limits(minute=Limit(5, 0.2), day=Limit(1_000, 3_600.0))
    span = lim.windows()[0].span
    s1 = Scheduler(lim, clock=SystemClock(), store=store(prefix, use_redis_time=True))
    s2 = Scheduler(lim, clock=SystemClock(), store=store(prefix, use_redis_time=True))
    sent: list[float] = []
    await asyncio.gather(take_all(s1, 8, sent), take_all(s2, 7, sent))
    await s1.aclose()
    await s2.aclose()
    r = aioredis.Redis.from_url(URL)
    scores = [sc / 1e6 for _, sc in await r.zrange(f"{prefix}{{acct}}:day", 0, -1, withscores=True)]
    await r.aclose()
    assert len(scores) == 15
    assert max_in_sliding(scores, span) == 5


async def test_a_429_pause_is_shared_through_redis(prefix: str) -> None:
    clock = ScaledClock(500)
    a = Scheduler(Limits(), clock=clock, store=store(prefix))
    b = Scheduler(Limits(), clock=clock, store=store(prefix))
    try:
        async with a.slot() as p:
            before = clock.now()
            p.observe(429, {"Retry-After": "30", "X-RateLimit-Remaining-Minute": "0"})
        await a.aclose()  # waits for the pause to reach Redis
        async with b.slot() as p2:  # b never saw the 429: Redis holds it back
            assert p2.sent_at >= before + 30.0
    finally:
        await a.aclose()
        await b.aclose()


async def test_refund_removes_the_admission_from_redis(prefix: str) -> None:
    clock = ScaledClock(500)
    s = Scheduler(Limits(), clock=clock, store=store(prefix))
    async with s.slot() as p:
        p.refund()
    async with s.slot():
        pass
    await s.aclose()
    r = aioredis.Redis.from_url(URL)
    assert await r.zcard(f"{prefix}{{acct}}:day") == 1
    await r.aclose()


async def test_a_given_client_is_left_open(prefix: str) -> None:
    client = aioredis.Redis.from_url(URL)
    s = Scheduler(
        Limits(), clock=ScaledClock(500), store=RedisStore(client, key="acct", prefix=prefix)
    )
    async with s.slot():
        pass
    await s.aclose()
    assert await client.ping()
    await client.aclose()


def test_three_processes_share_one_key(prefix: str) -> None:
    """Three OS processes, one RedisStore key, one scaled time line: never N + 1."""
    import subprocess

    clock = ScaledClock(200)
    n, margin = 10, 1.0
    cfg = {
        "speed": clock.speed,
        "start": clock.start,
        "anchor": clock._m0,
        "url": URL,
        "key": "acct",
        "prefix": prefix,
        "n": n,
        "margin": margin,
        "count": 20,
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.ratelimit.rl_worker", json.dumps(cfg)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        for _ in range(3)
    ]
    outs = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    sent = [t for o in outs for t in o["sent"]]
    assert len(sent) == 60
    assert max_in_sliding(sent, 60.0 + margin) == n
    assert max_in_fixed(sent, 60.0) <= n
    # the shared log itself holds the same 60 admission times
    r = redis.Redis(host="127.0.0.1", port=6379)
    log = [sc / 1e6 for _, sc in r.zrange(f"{prefix}{{acct}}:day", 0, -1, withscores=True)]
    r.close()
    assert sorted(log) == pytest.approx(sorted(sent), abs=1e-6)


async def test_three_processes_against_the_simulator_get_no_429(prefix: str) -> None:
    """The issue's end-to-end check: three processes, one key, the simulator, zero 429s."""
    from asyncwifi.testing import Simulator

    # the client now runs at the full rate the log allows, so the margin alone must absorb
    # the gap between admission and arrival (a new process's first request connects first)
    clock = ScaledClock(40)
    n = 10
    async with Simulator(clock=clock, minute_limit=n, rate_limit_mode="sliding") as sim:
        cfg = {
            "speed": clock.speed,
            "start": clock.start,
            "anchor": clock._m0,
            "url": URL,
            "key": "acct",
            "prefix": prefix,
            "n": n,
            # a clock second lasts 25 ms here: 10 s of margin absorbs 250 ms of real jitter
            "margin": 10.0,
            "count": 8,
            "base_url": sim.base_url,
            "client_key": sim.client_key,
            "client_secret": sim.client_secret,
            "organization": sim.organization,
        }
        procs = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "tests.ratelimit.rl_worker",
                json.dumps(cfg),
                cwd=ROOT,
                stdout=asyncio.subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            for _ in range(3)
        ]
        outs = [json.loads((await p.communicate())[0]) for p in procs]
        counters = sim.counters
    assert all(p.returncode == 0 for p in procs)
    statuses = [s for o in outs for s in o["statuses"]]
    assert len(statuses) == 27
    assert counters.rate_limited == 0
    assert statuses == [200] * 27
    assert counters.max_in_any_window <= n


@pytest.fixture
async def proxy() -> AsyncIterator[CuttableProxy]:
    p = CuttableProxy()
    await p.start()
    yield p
    await p.close()


async def test_unreachable_redis_falls_back_to_a_conservative_paced_limit() -> None:
    clock = ScaledClock(1000)
    events: list[ThrottleEvent] = []
    st = RedisStore(
        f"redis://127.0.0.1:{free_port()}", key="acct", use_redis_time=False, op_timeout=0.5
    )
    s = Scheduler(
        Limits(minute=Limit(8, 60.0), day=Limit(1_000, 86_400.0), max_in_flight=None),
        clock=clock,
        store=st,
    )
    s.on_throttle.append(events.append)
    sent: list[float] = []
    await take_all(s, 5, sent)
    snap = s.quota
    await s.aclose()
    assert snap.store == "redis-fallback"
    assert snap.degraded is not None
    assert "Redis unreachable" in snap.degraded
    assert [e.kind for e in events][:1] == ["fallback"]
    # never no limit: 25 % of 8 = 2 per window, evenly paced 61 / 2 s apart
    assert max_in_sliding(sent, 61.0) <= 2
    gaps = [b - a for a, b in zip(sorted(sent), sorted(sent)[1:], strict=False)]
    assert min(gaps) >= 30.5 - 1e-6


async def test_fallback_then_back_to_redis_with_the_meantime_merged(
    prefix: str, proxy: CuttableProxy
) -> None:
    clock = ScaledClock(1000)
    events: list[ThrottleEvent] = []
    st = RedisStore(
        f"redis://127.0.0.1:{proxy.port}",
        key="acct",
        prefix=prefix,
        use_redis_time=False,
        reconnect_interval=30.0,
        op_timeout=0.5,
    )
    lim = Limits(minute=Limit(8, 60.0), day=Limit(1_000, 86_400.0))
    s = Scheduler(replace(lim, max_in_flight=None), clock=clock, store=st)
    s.on_throttle.append(events.append)
    sent: list[float] = []
    await take_all(s, 8, sent)
    assert s.quota.store == "redis"
    proxy.cut()
    await take_all(s, 3, sent)  # the fallback: 2 per window, paced
    assert s.quota.store == "redis-fallback"
    proxy.up = True
    await clock.sleep(31.0)
    await take_all(s, 2, sent)
    assert s.quota.store == "redis"
    await s.aclose()
    assert [e.kind for e in events] == ["fallback", "restored"]
    assert max_in_sliding(sent, 61.0) <= 8
    r = aioredis.Redis.from_url(URL)
    assert await r.zcard(f"{prefix}{{acct}}:day") == len(sent) == 13  # fallback ones merged
    await r.aclose()


async def test_a_day_spent_elsewhere_raises_here_without_waiting(prefix: str) -> None:
    clock = ScaledClock(500)
    lim = Limits(minute=Limit(60, 60.0), day=Limit(3, 86_400.0))
    a = Scheduler(lim, clock=clock, store=store(prefix))
    b = Scheduler(replace(lim, on_exhausted="raise"), clock=clock, store=store(prefix))
    for _ in range(3):
        async with a.slot():
            pass
    with pytest.raises(QuotaExhaustedError) as ei:
        await b.acquire()
    assert ei.value.limit == "day"
    assert ei.value.reset_at > clock.now() + 80_000
    await a.aclose()
    await b.aclose()


async def test_object_counts_made_at_once_each_reach_redis_once(prefix: str) -> None:
    """A backfill's parallel scrolls count their pages at the same moment: each count is
    added once, however the calls interleave (each used to send the whole pending sum)."""
    shared = store(prefix)
    now = SystemClock().now()
    try:
        await asyncio.gather(*(shared.add_objects(now, "events", 100) for _ in range(20)))
        await shared.add_objects(now, "contacts", 7)
        counts = await shared.object_counts(now)
        assert counts.this_month == counts.today == {"events": 2_000, "contacts": 7}
    finally:
        await shared.aclose()
