"""A cold start (issue 33, item 14): a scheduler whose store knows nothing of what the key
spent recently sends one request first and paces within the remaining counts its answer
reports, in virtual time against a gateway that counts at arrival."""

from __future__ import annotations

import asyncio
import math
import uuid

import pytest
import redis

from asyncwifi.ratelimit import Limit, Limits, MemoryStore, Scheduler
from tests._virtualclock import VirtualClock
from tests.ratelimit.rlhelpers import START, FakeGateway

LATENCY = 0.2  # clock seconds from send to answer


def scheduler(clock: VirtualClock, store: MemoryStore | None = None) -> Scheduler:
    return Scheduler(Limits(minute=Limit(60, 60.0), day=None), clock=clock, store=store)


async def call(s: Scheduler, clock: VirtualClock, gw: FakeGateway, out: list[float]) -> int:
    """One request: admitted, counted by the gateway on arrival, its answer observed."""
    async with s.slot() as p:
        out.append(p.sent_at)
        await clock.sleep(LATENCY)
        status, headers = gw.arrive(clock.now())
        p.observe(status, headers)
    return status


def spent_elsewhere(left: int) -> FakeGateway:
    """A gateway whose current minute has ``left`` requests left (another client spent the
    rest: a worker killed a moment ago, say)."""
    gw = FakeGateway(60, 60.0, sliding=False)
    gw.fixed[math.floor(START / 60.0)] = 60 - left
    return gw


def test_a_fresh_scheduler_sends_one_request_first_and_paces_within_what_is_left() -> None:
    clock = VirtualClock(START)
    gw, out = spent_elsewhere(3), []

    async def main() -> list[int]:
        s = scheduler(clock)
        statuses = await asyncio.gather(*(call(s, clock, gw, out) for _ in range(20)))
        await s.aclose()
        return statuses

    statuses = clock.run(main())
    assert 429 not in statuses
    assert gw.refused == 0
    assert gw.accepted == 20
    assert out[0] == START
    # the first went alone: the others only after its answer (3 left: 2 more this minute)
    assert min(out[1:]) >= START + LATENCY
    assert sorted(out[1:3]) == [START + LATENCY] * 2
    assert min(out[3:]) >= START + 40  # the rest in the gateway's next UTC minute


def test_an_answer_without_rate_limit_headers_lets_the_rest_go_as_before() -> None:
    clock = VirtualClock(START)
    out: list[float] = []

    async def main() -> None:
        s = scheduler(clock)

        async def bare() -> None:
            async with s.slot() as p:
                out.append(p.sent_at)
                await clock.sleep(LATENCY)
                p.observe(200, {})

        await asyncio.gather(*(bare() for _ in range(10)))
        await s.aclose()

    clock.run(main())
    assert out == [START] + [START + LATENCY] * 9  # one probe, then no wait at all


def test_a_store_that_knows_the_key_s_spending_needs_no_probe() -> None:
    clock = VirtualClock(START)
    store, out = MemoryStore(), []
    gw = spent_elsewhere(60)

    async def main() -> None:
        earlier = scheduler(clock, store)  # another client of the key, same store
        for _ in range(3):
            await call(earlier, clock, gw, out)
        out.clear()
        s = scheduler(clock, store)
        await asyncio.gather(*(call(s, clock, gw, out) for _ in range(10)))
        await s.aclose()
        await earlier.aclose()

    clock.run(main())
    assert out == [out[0]] * 10  # all at once, as before item 14
    assert out[0] == pytest.approx(START + 3 * LATENCY)
    assert gw.refused == 0


def test_after_a_quiet_minute_the_next_burst_asks_the_server_first() -> None:
    clock = VirtualClock(START)
    gw, out = FakeGateway(60, 60.0, sliding=False), []

    async def main() -> list[int]:
        s = scheduler(clock)
        for _ in range(3):
            await call(s, clock, gw, out)
        await clock.sleep(120.0)  # this client idle: another spends the key meanwhile
        gw.fixed[math.floor(clock.now() / 60.0)] = 57
        out.clear()
        statuses = await asyncio.gather(*(call(s, clock, gw, out) for _ in range(20)))
        await s.aclose()
        return statuses

    statuses = clock.run(main())
    assert 429 not in statuses
    assert gw.refused == 0
    assert min(out[1:]) >= out[0] + LATENCY  # the first went alone


def test_a_fresh_redis_log_probes_and_one_with_history_does_not(redis_url: str) -> None:
    """A RedisStore without the key's history is a cold start; another process's admissions
    in the log (the shared store that item 14's fleet had not configured) are not."""
    from asyncwifi.ratelimit import RedisStore

    clock = VirtualClock(START)
    prefix = f"asyncwifi:test:cold:{uuid.uuid4().hex[:10]}:"
    gw, out = spent_elsewhere(3), []
    answers: list[bool] = []

    def store() -> RedisStore:
        return RedisStore(redis_url, key="cold", prefix=prefix, use_redis_time=False)

    async def main() -> tuple[list[int], list[float]]:
        s = scheduler(clock, store())
        statuses = await asyncio.gather(*(call(s, clock, gw, out) for _ in range(6)))
        await s.aclose()
        # a second process of the key, the log in Redis holding the first's admissions
        second = store()
        asked = second.blank

        def blank(span: float, own: int = 1) -> bool:  # what the store answered, recorded
            answers.append(asked(span, own))
            return answers[-1]

        second.blank = blank  # type: ignore[method-assign]
        other, more = scheduler(clock, second), []
        warm = FakeGateway(60, 60.0, sliding=False)
        await asyncio.gather(*(call(other, clock, warm, more) for _ in range(5)))
        await other.aclose()
        return statuses, more

    try:
        statuses, more = clock.run(main())
    finally:
        client = redis.Redis.from_url(redis_url)
        keys = list(client.scan_iter(f"{prefix}*"))
        if keys:
            client.delete(*keys)
        client.close()
    assert 429 not in statuses
    assert gw.refused == 0
    assert min(out[1:]) >= START + LATENCY  # the first went alone
    # the log knew of the key's spending: no probe. (The times of ``more`` cannot show it:
    # the virtual clock jumps while a real Redis round trip is pending.)
    assert answers == [False]
    assert len(more) == 5
