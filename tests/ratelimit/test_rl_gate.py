"""The month's object allowance as a gate (spec §8; issue 39): objects are reserved before a
request is sent, against what the allowance leaves less every request in flight holds, and
settled by the answer; in one process (``MemoryStore``) and across processes on one key
(``RedisStore``: atomically in its script, on one clock, each hold with a time to live).

The Redis tests run against the real Redis on 127.0.0.1:6379; times are given, never slept
(``use_redis_time=False``), except where two OS processes share a scaled clock.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from asyncwifi._clock import ScaledClock
from asyncwifi.errors import QuotaExhaustedError, ValidationError
from asyncwifi.ratelimit import Limits, MemoryStore, RateStore, RedisStore, Scheduler
from asyncwifi.ratelimit._volume import ObjectCounts, grant
from asyncwifi.testing import Simulator
from tests._virtualclock import VirtualClock

URL = "redis://127.0.0.1:6379"
ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC).timestamp()


def counts(**month: int) -> ObjectCounts:
    return ObjectCounts.of(NOW, month, month)


@pytest.mark.parametrize(
    ("allowance", "used", "held", "kind", "want", "least", "expected"),
    [
        ({"all": 500}, {}, {}, "events", 10_000, 1, (500, 500, "all")),
        ({"all": 500}, {"contacts": 200}, {"events": 100}, "events", 10_000, 1, (200, 300, "all")),
        ({"all": 500}, {"events": 500}, {}, "events", 1, 1, (0, 0, "all")),
        # a continuation needs its whole page: 150 left is not enough for 200
        ({"events": 500}, {"events": 350}, {}, "events", 200, 200, (0, 150, "events")),
        ({"events": 500}, {"events": 350}, {}, "events", 200, 1, (150, 150, "events")),
        # the least of both allowances binds; another kind's allowance does not
        (
            {"all": 1_000, "events": 300},
            {"events": 100},
            {},
            "events",
            500,
            1,
            (200, 200, "events"),
        ),
        ({"all": 1_000, "events": 300}, {"contacts": 900}, {}, "events", 500, 1, (100, 100, "all")),
        ({"contacts": 10}, {"contacts": 10}, {}, "events", 500, 1, (500, 1 << 62, "all")),
        # what is left is held by requests in flight: none now, some once they settle
        ({"all": 500}, {"events": 100}, {"events": 400}, "events", 50, 1, (0, 400, "all")),
    ],
)
def test_a_grant_is_the_least_any_allowance_leaves_less_what_is_held(
    allowance: dict[str, int],
    used: dict[str, int],
    held: dict[str, int],
    kind: str,
    want: int,
    least: int,
    expected: tuple[int, int, str],
) -> None:
    assert grant(allowance, counts(**used), held, kind, want, least) == expected


async def test_a_memory_store_holds_settles_and_releases() -> None:
    store = MemoryStore()
    allowance = {"all": 500}
    a = await store.reserve(NOW, "events", 400, 1, allowance)
    b = await store.reserve(NOW, "events", 400, 1, allowance)
    assert (a.size, b.size) == (400, 100)
    assert (await store.reserve(NOW, "contacts", 1, 1, allowance)).size == 0
    await store.add_objects(NOW, "events", 150, a.ticket)  # a short page: 250 come back
    store.release_objects(b.ticket)  # a request that failed: its 100 come back
    store.release_objects(b.ticket)  # again: no effect
    c = await store.reserve(NOW, "contacts", 1_000, 1, allowance)
    assert (c.size, c.free) == (350, 350)


def test_a_reservation_is_checked() -> None:
    clock = VirtualClock(NOW)

    async def main() -> None:
        async with Scheduler(Limits(month=10), clock=clock) as s:
            for want, least in ((0, 1), (5, 6), (5, 0), (1.5, 1), (True, 1)):
                with pytest.raises(ValidationError):
                    await s.object_gate.reserve("events", want, least=least)  # type: ignore[arg-type]
            # no allowance names "login": nothing is held, the request asks for what it wants
            free = await s.object_gate.reserve("login", 7)
            assert (free.size, free.ticket) == (7, None)

    clock.run(main())


def test_a_gate_waits_for_the_holds_in_flight_then_raises_at_the_allowance() -> None:
    clock = VirtualClock(NOW)

    async def main() -> None:
        async with Scheduler(Limits(month=500, on_exhausted="raise"), clock=clock) as s:
            gate = s.object_gate
            first = await gate.reserve("events", 10_000)
            assert first.size == 500
            waiting = asyncio.create_task(gate.reserve("events", 10_000))
            await asyncio.sleep(0)
            assert not waiting.done()  # what is left is held, not spent: not raised yet
            await gate.settle(first, "events", 120)  # a short page: 380 come back
            second = await waiting
            assert second.size == 380
            await gate.settle(second, "events", 380)
            with pytest.raises(QuotaExhaustedError) as spent:
                await gate.reserve("events", 1)
            assert spent.value.limit == "month"
            assert await s.objects() == {"events": 500}

    clock.run(main())


# -- Redis: one key, several processes ------------------------------------------------------


def store(prefix: str, **kw: Any) -> RedisStore:
    kw.setdefault("use_redis_time", False)
    return RedisStore(URL, key="acct", prefix=prefix, **kw)


@pytest.mark.redis
@pytest.mark.parametrize(
    ("allowance", "used", "holds", "kind", "want", "least"),
    [
        ({"all": 500}, {}, [], "events", 10_000, 1),
        ({"all": 500}, {"contacts": 200}, [("events", 100)], "events", 10_000, 1),
        ({"events": 500}, {"events": 350}, [], "events", 200, 200),
        ({"events": 500}, {"events": 350}, [], "events", 200, 1),
        ({"all": 1_000, "events": 300}, {"events": 100}, [("contacts", 50)], "events", 500, 1),
        ({"all": 1_000, "events": 300}, {"contacts": 900}, [("events", 60)], "events", 500, 1),
        ({"all": 500}, {"events": 100}, [("events", 300), ("contacts", 100)], "events", 50, 1),
        ({"all": 500}, {"events": 600}, [], "events", 1, 1),
    ],
)
async def test_the_script_grants_as_the_rule_does(
    prefix: str,
    allowance: dict[str, int],
    used: dict[str, int],
    holds: list[tuple[str, int]],
    kind: str,
    want: int,
    least: int,
) -> None:
    other, here = store(prefix), store(prefix)
    try:
        for k, n in used.items():
            await other.add_objects(NOW, k, n)
        big = {"all": 1 << 40}
        held: dict[str, int] = {}
        for k, n in holds:  # another process's requests in flight
            assert (await other.reserve(NOW, k, n, n, big)).size == n
            held[k] = held.get(k, 0) + n
        got = await here.reserve(NOW, kind, want, least, allowance)
        size, free, name = grant(allowance, counts(**used), held, kind, want, least)
        assert (got.size, got.free, got.name) == (size, free, name)
        assert (got.ticket is not None) == (size > 0)
        assert here.status == "redis"
    finally:
        await other.aclose()
        await here.aclose()


@pytest.mark.redis
async def test_a_settled_hold_ends_with_its_count_and_a_dead_ones_lapses(prefix: str) -> None:
    a, b = store(prefix, hold_ttl=300.0), store(prefix)
    allowance = {"all": 500}
    try:
        held = await a.reserve(NOW, "events", 10_000, 1, allowance)
        assert held.size == 500
        assert (await b.reserve(NOW + 1, "events", 10, 1, allowance)).size == 0
        await a.add_objects(NOW + 2, "events", 120, held.ticket)  # the page: 120 records
        got = await b.reserve(NOW + 3, "events", 10_000, 1, allowance)
        assert (got.size, got.free) == (380, 380)
        # b's process dies with its 380 held: the others get them back after its TTL
        assert (await a.reserve(NOW + 300, "events", 10, 1, allowance)).size == 0
        late = await a.reserve(NOW + 304, "events", 10_000, 1, allowance)
        assert late.size == 380
        a.release_objects(late.ticket)
        await asyncio.sleep(0.05)  # the release goes in the background
        assert (await b.reserve(NOW + 305, "events", 10_000, 1, allowance)).size == 380
    finally:
        await a.aclose()
        await b.aclose()


@pytest.mark.redis
async def test_streams_of_two_processes_on_one_key_serve_500_together(prefix: str) -> None:
    """Two OS processes, two event streams each, one Redis key, one simulator: an
    allowance of 500 serves 500 (it was a page per stream: 20,000 at the default size)."""
    clock = ScaledClock(100)
    weeks = ("2024-01-01", "2024-01-08", "2024-01-15", "2024-01-22", "2024-01-29")
    ranges = [(f"{weeks[i]}T00:00:00Z", f"{weeks[i + 1]}T00:00:00Z") for i in range(4)]
    async with Simulator(clock=clock, events=8_000) as sim:
        base = {
            "speed": clock.speed, "start": clock.start, "anchor": clock._m0, "url": URL,
            "key": "acct", "prefix": prefix, "month": 500, "streams": 2,
            "base_url": sim.base_url, "client_key": sim.client_key,
            "client_secret": sim.client_secret, "organization": sim.organization,
        }  # fmt: skip
        procs = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "tests.ratelimit.rl_worker",
                json.dumps({**base, "ranges": ranges[2 * i : 2 * i + 2]}),
                cwd=ROOT,
                stdout=asyncio.subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            for i in range(2)
        ]
        outs = [json.loads((await p.communicate())[0]) for p in procs]
        assert [p.returncode for p in procs] == [0, 0]
        served = sim.counters.objects_served["events"]
    assert served == 500
    # each stream's small first page, then a restart from its time cursor that reads its
    # boundary's event again (issue 42): served 500, delivered at most one fewer per stream
    assert 500 - 4 <= sum(n for o in outs for n in o["delivered"]) <= 500
    assert all(end == "month" for o in outs for end in o["ends"])
    assert max(o["counted"] for o in outs) == 500  # the last to count saw every process's
    shared: RateStore = store(prefix)
    assert (await shared.object_counts(clock.now())).this_month == {"events": 500}
    await shared.aclose()


@pytest.mark.redis
async def test_on_redis_clock_a_hold_settles_and_one_left_behind_lapses(prefix: str) -> None:
    """The default: the script reads Redis' clock (TIME), for the holds' time to live too."""
    a = store(prefix, use_redis_time=True)
    b = store(prefix, use_redis_time=True, hold_ttl=0.2)
    allowance = {"events": 100}
    try:
        held = await a.reserve(NOW, "events", 80, 1, allowance)
        assert (await b.reserve(NOW, "events", 80, 1, allowance)).size == 20
        await a.add_objects(NOW, "events", 30, held.ticket)  # 50 of a's 80 come back
        assert (await b.reserve(NOW, "events", 80, 1, allowance)).size == 50
        # b holds the rest, and never settles it (its process died)
        assert (await a.reserve(NOW, "events", 80, 1, allowance)).size == 0
        await asyncio.sleep(0.3)  # past b's holds' 0.2 s of Redis' clock
        got = await a.reserve(NOW, "events", 80, 1, allowance)
        assert (got.size, got.free) == (70, 70)  # 30 counted
    finally:
        await a.aclose()
        await b.aclose()
