"""Admissions carry a tag; the store counts them per tag per window (``Scheduler.used``),
in this process (``MemoryStore``) or across processes (two ``RedisStore``s on one key)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from asyncwifi._clock import ScaledClock
from asyncwifi._protocol import request_tag
from asyncwifi.errors import ValidationError
from asyncwifi.ratelimit import Limit, Limits, MemoryStore, RedisStore, Scheduler
from asyncwifi.testing import Simulator
from tests._virtualclock import VirtualClock
from tests.client._support import client_for
from tests.ratelimit.rlhelpers import START, require_redis

URL = "redis://127.0.0.1:6379"
LIMITS = Limits(minute=Limit(60, 60.0), day=Limit(15_000, 86_400.0))


async def spend(s: Scheduler, tags: list[str | None]) -> None:
    for tag in tags:
        s.release(await s.acquire(tag=tag))


def test_memory_counts_per_tag_per_window() -> None:
    clock = VirtualClock(START)

    async def main() -> None:
        store = MemoryStore()
        a = Scheduler(LIMITS, clock=clock, store=store)
        b = Scheduler(LIMITS, clock=clock, store=store)  # one key, two clients: one count
        await spend(a, ["events", "events", "login", None])
        await spend(b, ["events", "contacts"])
        assert await a.used() == {"events": 3, "login": 1, "contacts": 1, "other": 1}
        assert await b.used("events") == 3
        assert await b.used("segments") == 0
        await clock.sleep(61.0)  # the minute (61 s with its margin) is past, the day is not
        p = await a.acquire(tag="events")
        assert await a.used(window="minute") == {"events": 1}
        assert await a.used("events", window="day") == 4
        a.refund(p)  # never sent: not counted
        assert await a.used("events") == 3
        with pytest.raises(ValidationError, match="hour"):
            await a.used(window="hour")
        with pytest.raises(ValidationError, match="tag"):
            await a.acquire(tag="")
        await a.aclose()
        await b.aclose()

    clock.run(main())


def test_a_third_window_is_counted_like_the_others() -> None:
    """Windows are generic: an hour window needs no code of its own."""
    clock = VirtualClock(START)
    limits = Limits(minute=Limit(60, 60.0), day=None, others={"hour": Limit(3, 3600.0)})

    async def main() -> list[float]:
        s = Scheduler(replace(limits, max_in_flight=None), clock=clock)
        sent = []
        for tag in ("a", "b", "a", "b"):
            async with s.slot(tag=tag) as p:
                sent.append(p.sent_at)
        # the hour's span is 3,601 s (the minute's margin): the first three have left it
        assert await s.used(window="hour") == {"b": 1}
        assert await s.used() == {"b": 1}  # the longest window is the default
        assert s.quota.windows["hour"].limit == 3
        await s.aclose()
        return sent

    assert clock.run(main()) == [START] * 3 + [START + 3601.0]


@pytest.mark.redis
async def test_two_processes_on_one_redis_key_share_the_counts(prefix: str) -> None:
    """Two stores on one key stand for two processes: each reads every admission."""
    require_redis()
    clock = ScaledClock(500)

    def store() -> RedisStore:
        return RedisStore(URL, key="acct", prefix=prefix, use_redis_time=False)

    a = Scheduler(LIMITS, clock=clock, store=store())
    b = Scheduler(LIMITS, clock=clock, store=store())
    try:
        await spend(a, ["events", "events", "login"])
        await spend(b, ["contacts", "contacts", "contacts", None])
        totals = {"events": 2, "login": 1, "contacts": 3, "other": 1}
        assert await a.used() == totals
        assert await b.used() == totals
        assert await b.used("events") == 2
        p = await b.acquire(tag="events")
        b.refund(p)  # given back, in Redis too
        for _ in range(100):  # the refund is sent in the background
            if await a.used("events") == 2:
                break
            await asyncio.sleep(0.01)
        assert await a.used("events") == 2
        await clock.sleep(62.0)  # past the minute's span (61 s): only the day counts them
        assert await a.used(window="minute") == {}
        assert await a.used(window="day") == totals
    finally:
        await a.aclose()
        await b.aclose()


@pytest.mark.redis
async def test_redis_time_line_counts_alike(prefix: str) -> None:
    """With Redis' own clock (the default), the counts are read on Redis' time line."""
    require_redis()
    s = Scheduler(LIMITS, store=RedisStore(URL, key="acct", prefix=prefix))
    try:
        await spend(s, ["events", "segments"])
        assert await s.used() == {"events": 1, "segments": 1}
    finally:
        await s.aclose()


async def test_while_redis_is_unreachable_the_counts_are_this_processes() -> None:
    store = RedisStore("redis://127.0.0.1:1", key="acct", use_redis_time=False, op_timeout=0.2)
    s = Scheduler(replace(LIMITS, max_in_flight=None), clock=ScaledClock(1000), store=store)
    try:
        await spend(s, ["events", "login"])
        assert s.quota.store == "redis-fallback"
        assert await s.used() == {"events": 1, "login": 1}
    finally:
        await s.aclose()


def test_the_client_tags_each_request_by_what_it_asks_for() -> None:
    assert request_tag("/v1/sts/login/services") == "login"
    assert request_tag("/v1/sts/logout") == "logout"
    assert request_tag("/v1/organizations/org/events") == "events"
    assert request_tag("/v1/organizations/org/customers/c1/events") == "events"
    assert request_tag("/v2/customers/organizations/org") == "contacts"
    assert request_tag("/v3/hotspots/h1") == "hotspots"
    assert request_tag("/v2/segments/organizations/org") == "segments"
    assert request_tag("/v9/other") == "other"


async def test_a_client_counts_its_login_and_its_requests() -> None:
    async with Simulator(clock=ScaledClock(100)) as sim, client_for(sim) as api:
        await api.segments.list()
        await api.segments.list()
        await api.hotspots.list()
        assert await api.scheduler.used() == {"login": 1, "segments": 2, "hotspots": 1}
