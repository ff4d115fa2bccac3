"""The request pipeline over real HTTP: one give-up rule for reads and writes."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from tenacity import RetryCallState, Retrying

from asyncwifi import RetryInfo, RetryPolicy, ScaledClock
from asyncwifi._retry import ClientWait, Remedy, classify
from asyncwifi.errors import (
    AmbiguousWriteError,
    NotFoundError,
    RateLimitedError,
    ServerError,
    TransportError,
)
from asyncwifi.testing import Faults, Simulator
from tests.client._support import NO_LIMITS, SPEED, client_for
from tests.client.test_endpoints import new_hotspot

#: 22:00 UTC: the gateway's day window resets two hours later, at midnight
TEN_PM = datetime(2026, 3, 2, 22, 0, tzinfo=UTC).timestamp()


def _date_429_simulator() -> Simulator:
    """A gateway whose day is spent after the login, its 429s rewritten by a proxy in front
    of it: ``Retry-After`` an HTTP date two hours away, no rate-limit headers."""
    return Simulator(
        clock=ScaledClock(SPEED, start=TEN_PM),
        day_limit=1,
        faults=Faults(date_429_rate=1.0),
    )


async def test_a_429_with_a_far_http_date_raises_instead_of_sleeping() -> None:
    # The README: "a 429 whose reset is further away than max_rate_limit_wait raises".
    # Retry-After was read as a number only, so a date meant "no wait": the client retried
    # and sat in the scheduler for two hours.
    async with _date_429_simulator() as sim:
        policy = RetryPolicy(max_rate_limit_wait=60, backoff_base=0.05, backoff_max=0.5)
        async with client_for(sim, retry=policy, limits=NO_LIMITS) as api:
            with pytest.raises(RateLimitedError) as caught:
                # a guard only: the old code waits 72 real seconds here
                await asyncio.wait_for(api.segments.list(), timeout=15)
        assert sim.counters.faults["date_429"] == 1
        # one refused request, not retried
        assert sim.counters.rate_limited == 1
    assert caught.value.retry_after is not None
    assert 7_000 < caught.value.retry_after <= 7_200
    assert caught.value.reset_at is not None


async def test_a_write_refused_with_a_far_http_date_raises_too() -> None:
    async with _date_429_simulator() as sim:
        policy = RetryPolicy(max_rate_limit_wait=60, backoff_base=0.05, backoff_max=0.5)
        async with client_for(sim, retry=policy, limits=NO_LIMITS) as api:
            with pytest.raises(RateLimitedError):
                await asyncio.wait_for(api.hotspots.create(new_hotspot(1)), timeout=15)
        assert sim.counters.rate_limited == 1


def _429(body: bytes) -> RateLimitedError:
    return RateLimitedError("limited", body=body, retry_after=1.0)


@pytest.mark.parametrize(
    ("error", "read", "write"),
    [
        (_429(b"{}"), Remedy.RETRY, Remedy.RETRY),  # refused before the API
        (_429(b""), Remedy.RAISE, Remedy.VERIFY),  # object quota: executed
        (ServerError("x", status=503), Remedy.RETRY, Remedy.VERIFY),
        (TransportError("x", kind="connect"), Remedy.RETRY, Remedy.RETRY),
        (TransportError("x", kind="timeout"), Remedy.RETRY, Remedy.VERIFY),
        (TransportError("x", kind="tls"), Remedy.RAISE, Remedy.RAISE),
        (NotFoundError("x", status=404), Remedy.RAISE, Remedy.RAISE),
    ],
)
def test_one_classifier_for_reads_and_writes(error: Exception, read: Remedy, write: Remedy) -> None:
    assert classify(error, write=False) is read
    assert classify(error, write=True) is write


def test_the_give_up_rule_reads_the_servers_wait_and_counts() -> None:
    policy = RetryPolicy(max_attempts=3, max_rate_limit_wait=60, max_rate_limited=2)
    far = RateLimitedError("limited", body=b"{}", retry_after=7_200.0)
    near = _429(b"{}")
    assert policy.gives_up(far, attempts=1, rate_limited=1, elapsed=0.0)
    assert not policy.gives_up(near, attempts=9, rate_limited=2, elapsed=0.0)
    assert policy.gives_up(near, attempts=1, rate_limited=3, elapsed=0.0)
    boom = ServerError("x", status=500)
    assert not policy.gives_up(boom, attempts=2, rate_limited=0, elapsed=0.0)
    assert policy.gives_up(boom, attempts=3, rate_limited=0, elapsed=0.0)
    assert policy.gives_up(boom, attempts=1, rate_limited=0, elapsed=301.0)
    failed = RetryCallState(Retrying(), None, (), {})
    failed.set_exception((type(near), near, None))
    assert ClientWait(policy)(failed) == 0.0


async def test_a_write_that_never_takes_effect_is_retried_by_the_same_rule(
    make_sim: Any,
) -> None:
    # every POST answered 503 before the API: each lookup shows no hotspot, so the write is
    # repeated, max_attempts in all, each retry reported to on_retry like a read's
    retries: list[RetryInfo] = []
    async with make_sim() as sim:
        sim.faults = Faults(error_rate=1.0, methods=("POST",), paths=("/v3/hotspots",))
        policy = RetryPolicy(max_attempts=3, backoff_base=0.01, backoff_max=0.05)
        async with client_for(sim, retry=policy, hooks={"retry": retries.append}) as api:
            before = len(await api.hotspots.list())
            with pytest.raises(AmbiguousWriteError, match="did not take effect after 3"):
                await api.hotspots.create(new_hotspot(1))
            assert len(await api.hotspots.list()) == before
        assert sim.counters.faults["error"] == 3
    assert [r.attempt for r in retries] == [1, 2]
    assert {r.method for r in retries} == {"POST"}
