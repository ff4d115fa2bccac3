"""The one owner of retries and their backoff (asyncwifi._retry), alone, on a virtual clock."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest
from tenacity import RetryCallState, Retrying

from asyncwifi import RetryPolicy
from asyncwifi._retry import ClientWait, delay_after, exponential, retry_while
from asyncwifi.errors import RateLimitedError, ServerError
from asyncwifi.webhooks._dispatcher import HANDLER_RETRY
from tests._virtualclock import VirtualClock

START = 1_700_000_000.0


class Down(Exception):
    """The resource is unreachable (what retry_while retries)."""


def _flaky(clock: VirtualClock, failures: int, calls: list[float]) -> Callable[[], Awaitable[str]]:
    async def call() -> str:
        calls.append(clock.now() - START)
        if len(calls) <= failures:
            raise Down(f"down #{len(calls)}")
        return "up"

    return call


def test_retry_while_doubles_from_initial_to_maximum_on_the_given_sleep() -> None:
    clock = VirtualClock(START)
    calls: list[float] = []
    failures: list[str] = []
    sleeps: list[tuple[str, float]] = []

    async def main() -> str:
        return await retry_while(
            _flaky(clock, 6, calls),
            retry_on=Down,
            initial=1.0,
            maximum=8.0,
            sleep=clock.sleep,
            on_failure=lambda exc: failures.append(str(exc)),
            before_sleep=lambda exc, wait: sleeps.append((str(exc), wait)),
        )

    real = time.perf_counter()
    assert clock.run(main()) == "up"
    assert time.perf_counter() - real < 2
    waits = [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert [wait for _, wait in sleeps] == waits
    assert [exc for exc, _ in sleeps] == [f"down #{n}" for n in range(1, 7)]
    assert failures == [f"down #{n}" for n in range(1, 7)]
    # each call went out when the previous wait ended, in virtual seconds
    assert calls == [0.0, 1.0, 3.0, 7.0, 15.0, 23.0, 31.0]


def test_retry_while_re_raises_the_failure_once_give_up_says_so() -> None:
    clock = VirtualClock(START)
    calls: list[float] = []
    failures: list[str] = []

    async def main() -> str:
        return await retry_while(
            _flaky(clock, 100, calls),
            retry_on=Down,
            initial=1.0,
            maximum=60.0,
            sleep=clock.sleep,
            on_failure=lambda exc: failures.append(str(exc)),
            give_up=lambda: len(calls) >= 3,
        )

    with pytest.raises(Down, match="down #3"):
        clock.run(main())
    assert calls == [0.0, 1.0, 3.0]
    # on_failure ran for the last failure too, before give_up was asked
    assert failures == ["down #1", "down #2", "down #3"]


def test_retry_while_lets_other_exceptions_and_the_sleeps_own_through() -> None:
    clock = VirtualClock(START)

    async def broken() -> str:
        raise KeyError("not a Down")

    async def stopped(seconds: float) -> None:
        raise RuntimeError("stopped while waiting")

    async def other() -> str:
        return await retry_while(broken, retry_on=Down, initial=1.0, maximum=2.0, sleep=clock.sleep)

    async def cut() -> str:
        return await retry_while(
            _flaky(clock, 5, []),
            retry_on=(Down, KeyError),
            initial=1.0,
            maximum=2.0,
            sleep=stopped,
        )

    with pytest.raises(KeyError):
        clock.run(other())
    with pytest.raises(RuntimeError, match="stopped while waiting"):
        clock.run(cut())


def test_retry_while_with_jitter_stays_below_the_doubling_ceiling() -> None:
    clock = VirtualClock(START)
    waits: list[float] = []

    async def main() -> str:
        return await retry_while(
            _flaky(clock, 8, []),
            retry_on=Down,
            initial=0.5,
            maximum=4.0,
            sleep=clock.sleep,
            before_sleep=lambda exc, wait: waits.append(wait),
            jitter=True,
        )

    assert clock.run(main()) == "up"
    ceilings = [0.5, 1.0, 2.0, 4.0, 4.0, 4.0, 4.0, 4.0]
    assert all(0.0 <= w <= c for w, c in zip(waits, ceilings, strict=True))


def test_exponential_and_delay_after_give_the_webhook_figures() -> None:
    wait = exponential(1.0, 300.0)
    assert [delay_after(wait, n) for n in (1, 2, 3, 9, 10, 50)] == [1, 2, 4, 256, 300, 300]
    # the one RetryPolicy, scheduled (the webhook spool): the same figures, no jitter
    assert [HANDLER_RETRY.delay(n) for n in (1, 2, 3, 9, 10, 50)] == [1, 2, 4, 256, 300, 300]
    policy = RetryPolicy(backoff_base=2.0, backoff_max=100.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4, 5, 6)] == [2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    assert policy.delay(7) == 100.0
    # an attempt number past any float power still names the cap
    assert policy.delay(10_000) == 100.0


def _failed(error: BaseException, attempt: int) -> RetryCallState:
    state = RetryCallState(Retrying(), None, (), {})
    state.attempt_number = attempt
    state.set_exception((type(error), error, None))
    return state


def test_the_clients_wait_is_full_jitter_except_after_a_refused_429() -> None:
    wait = ClientWait(RetryPolicy(backoff_base=0.5, backoff_max=4.0))
    boom = ServerError("x", status=503)
    for attempt, ceiling in ((1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (9, 4.0)):
        drawn = [wait(_failed(boom, attempt)) for _ in range(200)]
        assert all(0.0 <= w <= ceiling for w in drawn)
        assert max(drawn) > ceiling * 0.8  # jittered over the whole range
    refused = RateLimitedError("limited", body=b"{}", retry_after=30.0)
    assert wait(_failed(refused, 3)) == 0.0


async def test_retry_while_awaits_a_plain_callable_that_returns_an_awaitable() -> None:
    async def answer() -> str:
        return "x"

    result = await retry_while(
        lambda: answer(), retry_on=OSError, initial=0.1, maximum=1.0, sleep=asyncio.sleep
    )
    assert result == "x"
