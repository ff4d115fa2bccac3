"""Objects counted in Redis (spec §8): every process of a key sees every count, exactly once.

``RedisStore.add_objects`` keeps a hash per UTC month and per UTC day beside the admission
log. These tests run against the real Redis on 127.0.0.1:6379 (skipped when it is not
there, failed under ASYNCWIFI_REQUIRE_REDIS=1): two stores on one key, two OS processes,
many concurrent counts, Redis lost and back (counts made meanwhile added once), a reply
lost after Redis ran the count, and periods rolling over. Times are given, never slept.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from asyncwifi._clock import ScaledClock
from asyncwifi.errors import QuotaExhaustedError
from asyncwifi.ratelimit import Limits, RedisStore, Scheduler
from asyncwifi.ratelimit._redis_scripts import OBJECTS
from tests._proxy import CuttableProxy

pytestmark = pytest.mark.redis

URL = "redis://127.0.0.1:6379"
ROOT = Path(__file__).resolve().parents[2]


def at(*ymdhms: int) -> float:
    return datetime(*ymdhms, tzinfo=UTC).timestamp()  # type: ignore[misc]


NOW = at(2026, 11, 27, 12, 0)


def store(prefix: str, url: str = URL, **kw: Any) -> RedisStore:
    kw.setdefault("use_redis_time", False)
    return RedisStore(url, key="acct", prefix=prefix, **kw)


async def hashes(prefix: str) -> dict[str, dict[str, int]]:
    """Every object hash of the key in Redis: ``{"m:2026-11": {"events": 3}, ...}``."""
    r = aioredis.Redis.from_url(URL, decode_responses=True)
    base = f"{prefix}{{acct}}:objects:"
    out = {}
    async for key in r.scan_iter(f"{base}*"):
        if key[len(base) :].startswith(("m:", "d:")):
            out[key[len(base) :]] = {k: int(v) for k, v in (await r.hgetall(key)).items()}
    await r.aclose()
    return out


@pytest.fixture
async def proxy() -> AsyncIterator[CuttableProxy]:
    p = CuttableProxy()
    await p.start()
    yield p
    await p.close()


async def test_two_stores_on_one_key_see_each_others_counts(prefix: str) -> None:
    a, b = store(prefix), store(prefix)
    try:
        await a.add_objects(NOW, "events", 300)
        seen = await b.add_objects(NOW + 1, "contacts", 20)
        assert seen.this_month == seen.today == {"events": 300, "contacts": 20}
        assert (await a.object_counts(NOW + 2)).this_month == {"events": 300, "contacts": 20}
        assert await hashes(prefix) == {
            "m:2026-11": {"events": 300, "contacts": 20},
            "d:2026-11-27": {"events": 300, "contacts": 20},
        }
    finally:
        await a.aclose()
        await b.aclose()


async def test_concurrent_counts_of_one_process_are_each_added_once(prefix: str) -> None:
    # a client counts after every response: 16 requests in flight count at once
    a, b = store(prefix), store(prefix)
    try:
        await asyncio.gather(
            *(a.add_objects(NOW, "events", 10) for _ in range(40)),
            *(b.add_objects(NOW, "contacts", 1) for _ in range(25)),
        )
        assert await hashes(prefix) == {
            "m:2026-11": {"events": 400, "contacts": 25},
            "d:2026-11-27": {"events": 400, "contacts": 25},
        }
        assert (await b.object_counts(NOW)).this_month == {"events": 400, "contacts": 25}
    finally:
        await a.aclose()
        await b.aclose()


async def test_schedulers_of_two_processes_share_the_month(prefix: str) -> None:
    """Two OS processes count objects on one key; each scheduler here sees them all, and
    the month's allowance spent over there holds requests back here."""
    clock = ScaledClock(100)
    cfg = {"url": URL, "key": "acct", "prefix": prefix, "objects": 250, "now": clock.now()}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.ratelimit.rl_worker", json.dumps(cfg)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        for _ in range(2)
    ]
    outs = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    # each child saw its own 250 at least, and the last count of one saw both
    assert max(o["events"] for o in outs) == 500
    limits = Limits(month={"events": 500}, on_exhausted="raise")
    async with Scheduler(limits, clock=clock, store=store(prefix)) as here:
        assert await here.objects() == {"events": 500}
        assert here.quota.volume.remaining("events") == 0
        with pytest.raises(QuotaExhaustedError, match="500 for events; 500 exchanged"):
            await here.object_gate.reserve("events", 1)
        here.object_gate.release(await here.object_gate.reserve("contacts", 1))  # not held


async def test_counts_made_while_redis_is_lost_are_added_once_it_is_back(
    prefix: str, proxy: CuttableProxy
) -> None:
    other = store(prefix)  # another process, Redis reachable all along
    here = store(prefix, f"redis://127.0.0.1:{proxy.port}", reconnect_interval=30.0, op_timeout=0.3)
    try:
        await other.add_objects(NOW, "events", 1_000)
        assert (await here.add_objects(NOW, "events", 5)).this_month == {"events": 1_005}
        proxy.cut()
        lost = await here.add_objects(NOW + 1, "events", 7)
        assert here.status == "redis-fallback"
        # what this process knows: the shared count it last read, and its own since
        assert lost.this_month == {"events": 1_012}
        assert (await here.add_objects(NOW + 2, "contacts", 3)).this_month == {
            "events": 1_012,
            "contacts": 3,
        }
        assert (await here.object_counts(NOW + 3)).this_month["events"] == 1_012
        assert await hashes(prefix) == {
            "m:2026-11": {"events": 1_005},
            "d:2026-11-27": {"events": 1_005},
        }
        proxy.up = True
        # not before the reconnect interval: nothing is tried, nothing is sent twice
        assert (await here.object_counts(NOW + 10)).this_month["events"] == 1_012
        back = await here.object_counts(NOW + 40)
        assert here.status == "redis"
        assert back.this_month == {"events": 1_012, "contacts": 3}
        for t in (NOW + 41, NOW + 42):  # and again: added once
            assert (await here.object_counts(t)).this_month == {"events": 1_012, "contacts": 3}
        assert await hashes(prefix) == {
            "m:2026-11": {"events": 1_012, "contacts": 3},
            "d:2026-11-27": {"events": 1_012, "contacts": 3},
        }
    finally:
        await here.aclose()
        await other.aclose()


async def test_a_count_whose_reply_was_lost_is_not_added_twice(prefix: str) -> None:
    """Redis ran the count, the answer never came (a timeout): sent again, added once."""
    here = store(prefix, reconnect_interval=1.0)
    real, lost = here._call, [0]

    async def reply_lost(now: float, body: str, keys: list[str], args: list[Any]) -> Any:
        reply = await real(now, body, keys, args)
        if body is OBJECTS and not lost[0]:
            lost[0] += 1
            here._enter_fallback(now, TimeoutError("the reply was lost"))
            return None
        return reply

    here._call = reply_lost  # type: ignore[method-assign]
    try:
        await here.add_objects(NOW, "events", 40)
        assert here.status == "redis-fallback"
        assert await hashes(prefix) == {"m:2026-11": {"events": 40}, "d:2026-11-27": {"events": 40}}
        await here.add_objects(NOW + 5, "events", 2)  # Redis back: the batch goes again
        assert here.status == "redis"
        assert await hashes(prefix) == {"m:2026-11": {"events": 42}, "d:2026-11-27": {"events": 42}}
    finally:
        await here.aclose()


async def test_the_day_and_the_month_roll_over_at_midnight_utc(prefix: str) -> None:
    a, b = store(prefix), store(prefix)
    try:
        await a.add_objects(at(2026, 12, 30, 23, 59, 59), "events", 5)
        day = await b.add_objects(at(2026, 12, 31, 0, 0), "events", 7)
        assert (day.day, day.today, day.this_month) == ("2026-12-31", {"events": 7}, {"events": 12})
        await a.add_objects(at(2026, 12, 31, 23, 59, 59), "contacts", 1)
        january = await b.object_counts(at(2027, 1, 1, 0, 0))
        assert (january.month, january.this_month, january.today) == ("2027-01", {}, {})
        await b.add_objects(at(2027, 1, 1, 0, 0), "events", 2)
        assert await hashes(prefix) == {
            "m:2026-12": {"events": 12, "contacts": 1},
            "d:2026-12-30": {"events": 5},
            "d:2026-12-31": {"events": 7, "contacts": 1},
            "m:2027-01": {"events": 2},
            "d:2027-01-01": {"events": 2},
        }
        r = aioredis.Redis.from_url(URL)
        base = f"{prefix}{{acct}}:objects:"
        month_ttl, day_ttl = await r.pttl(base + "m:2027-01"), await r.pttl(base + "d:2027-01-01")
        await r.aclose()
        assert 31 * 86_400_000 < month_ttl <= 40 * 86_400_000  # they expire on their own
        assert 86_400_000 < day_ttl <= 2 * 86_400_000
    finally:
        await a.aclose()
        await b.aclose()


async def test_counts_kept_across_midnight_land_in_their_own_day(
    prefix: str, proxy: CuttableProxy
) -> None:
    here = store(prefix, f"redis://127.0.0.1:{proxy.port}", reconnect_interval=30.0, op_timeout=0.3)
    try:
        await here.add_objects(at(2026, 11, 30, 23, 50), "events", 1)
        proxy.cut()
        await here.add_objects(at(2026, 11, 30, 23, 59), "events", 4)  # November's
        proxy.up = True
        december = await here.add_objects(at(2026, 12, 1, 0, 1), "events", 6)
        assert december.this_month == december.today == {"events": 6}
        assert await hashes(prefix) == {
            "m:2026-11": {"events": 5},
            "d:2026-11-30": {"events": 5},
            "m:2026-12": {"events": 6},
            "d:2026-12-01": {"events": 6},
        }
    finally:
        await here.aclose()
