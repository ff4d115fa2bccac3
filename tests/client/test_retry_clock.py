"""The client's retries under a virtual clock: tenacity waits and stops on the injected clock.

A MockTransport answers on a :class:`VirtualClock`, so an hour of ``Retry-After`` or of
backoff passes in no real time, and each request's send time is exact.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from email.utils import formatdate
from typing import Any

import pytest

from asyncwifi import Client, Limits, MockTransport, RetryInfo, RetryPolicy
from asyncwifi._call import Verdict
from asyncwifi._transport import Request, Response
from asyncwifi.errors import (
    AmbiguousWriteError,
    RateLimitedError,
    ServerError,
    TransportError,
)
from tests._virtualclock import VirtualClock

START = 1_772_488_800.0  # 2026-03-02 22:00:00 UTC, a whole second (HTTP dates have no fraction)
PATH = "/v2/things"


def _b64(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


LOGIN = json.dumps({"token": f"{_b64({'alg': 'HS256'})}.{_b64({'exp': 4e9})}.sig"}).encode()


class Api:
    """A fake API on a virtual clock: ``answer(request, n)`` answers the n-th call to PATH
    (1-based) and ``sent`` records the clock time of each."""

    def __init__(self, clock: VirtualClock, answer: Callable[[Request, int], Response]) -> None:
        self.clock = clock
        self.answer = answer
        self.sent: list[tuple[str, float]] = []

    def __call__(self, request: Request) -> Response:
        if "login" in request.path:
            return Response(200, {}, LOGIN)
        self.sent.append((request.method, self.clock.now()))
        return self.answer(request, len(self.sent))


def _client(clock: VirtualClock, api: Api, policy: RetryPolicy, **options: Any) -> Client:
    return Client(
        "key",
        "secret",
        base_url="https://api.invalid",
        organization="org",
        transport=MockTransport(api),
        limits=Limits(minute=None, day=None),
        clock=clock,
        retry=policy,
        **options,
    )


def _refused(retry_after: str) -> Response:
    """A 429 with a body (the gateway refused it before the API: safe to repeat)."""
    return Response(429, {"Retry-After": retry_after}, b'{"message": "slow down"}')


OK = Response(200, {}, b'{"ok": true}')


def _decode(body: bytes | memoryview) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(bytes(body))
    return decoded


@pytest.mark.parametrize("form", ["seconds", "date"])
def test_retry_after_is_honoured_in_seconds_and_as_an_http_date(form: str) -> None:
    clock = VirtualClock(START)
    retries: list[RetryInfo] = []

    def answer(request: Request, n: int) -> Response:
        if n > 1:
            return OK
        value = "120" if form == "seconds" else formatdate(clock.now() + 120, usegmt=True)
        return _refused(value)

    api = Api(clock, answer)

    async def main() -> dict[str, Any]:
        async with _client(clock, api, RetryPolicy(), hooks={"retry": retries.append}) as client:
            return await client._api.read("GET", PATH, tag="other", decode=_decode)

    real = time.perf_counter()
    assert clock.run(main()) == {"ok": True}
    assert time.perf_counter() - real < 5
    (_, first), (_, second) = api.sent
    # the retry goes out at the server's reset, not before (the scheduler holds it there)
    assert second - first == pytest.approx(120.0, abs=1e-6)
    assert [(r.attempt, r.error) for r in retries] == [(1, "RateLimitedError")]


@pytest.mark.parametrize("form", ["seconds", "date"])
def test_a_wait_past_max_rate_limit_wait_raises_at_once(form: str) -> None:
    clock = VirtualClock(START)

    def answer(request: Request, n: int) -> Response:
        two_hours = clock.now() + 7_200
        return _refused("7200" if form == "seconds" else formatdate(two_hours, usegmt=True))

    api = Api(clock, answer)

    async def main() -> None:
        async with _client(clock, api, RetryPolicy(max_rate_limit_wait=60)) as client:
            await client._api.read("GET", PATH, tag="other", decode=_decode)

    with pytest.raises(RateLimitedError) as caught:
        clock.run(main())
    assert caught.value.retry_after == pytest.approx(7_200.0)
    assert len(api.sent) == 1  # not retried
    assert clock.now() == START  # and not slept on


def _write(clock: VirtualClock, api: Api, verify: Any, policy: RetryPolicy | None = None) -> Any:
    async def main() -> Any:
        async with _client(clock, api, policy or RetryPolicy()) as client:
            return await client._api.write(
                "POST", PATH, tag="other", body=b"{}", decode=_decode, verify=verify
            )

    return clock.run(main())


def _timeout_then_ok(request: Request, n: int) -> Response:
    if n == 1:
        raise TransportError("read timed out", kind="timeout")
    return OK


def test_a_write_that_timed_out_and_took_effect_is_not_repeated() -> None:
    clock = VirtualClock(START)
    api = Api(clock, _timeout_then_ok)
    looked: list[int] = []

    async def verify() -> Verdict[dict[str, Any]]:
        looked.append(len(api.sent))
        return Verdict(True, {"found": True})

    assert _write(clock, api, verify) == {"found": True}
    assert looked == [1]
    assert [method for method, _ in api.sent] == ["POST"]  # sent once


def test_a_write_that_timed_out_is_repeated_only_after_a_lookup_says_it_did_not_happen() -> None:
    clock = VirtualClock(START)
    api = Api(clock, _timeout_then_ok)
    looked: list[int] = []

    async def verify() -> Verdict[dict[str, Any]]:
        looked.append(len(api.sent))
        return Verdict(False)

    assert _write(clock, api, verify) == {"ok": True}
    # the lookup came between the two POSTs
    assert looked == [1]
    assert len(api.sent) == 2


def test_a_write_that_timed_out_with_no_way_to_check_raises() -> None:
    clock = VirtualClock(START)
    api = Api(clock, _timeout_then_ok)
    with pytest.raises(AmbiguousWriteError, match="not retried"):
        _write(clock, api, None)
    assert len(api.sent) == 1


def test_the_time_limit_reads_the_injected_clock() -> None:
    # backoff of up to 40 virtual seconds, attempts unbounded: only max_elapsed stops it
    clock = VirtualClock(START)
    api = Api(clock, lambda request, n: Response(503, {}, b""))
    policy = RetryPolicy(max_attempts=1_000, max_elapsed=300, backoff_base=40, backoff_max=40)

    async def main() -> None:
        async with _client(clock, api, policy) as client:
            await client._api.read("GET", PATH, tag="other", decode=_decode)

    real = time.perf_counter()
    with pytest.raises(ServerError):
        clock.run(main())
    assert time.perf_counter() - real < 5
    last = api.sent[-1][1]
    # the give-up came at the first failure past 300 virtual seconds, not before
    assert last - START > 300
    assert api.sent[-2][1] - START <= 300
    assert len(api.sent) < 1_000


def test_a_write_that_never_takes_effect_gives_up_on_the_injected_clock() -> None:
    clock = VirtualClock(START)
    api = Api(clock, lambda request, n: Response(503, {}, b""))
    policy = RetryPolicy(max_attempts=1_000, max_elapsed=60, backoff_base=10, backoff_max=10)

    async def verify() -> Verdict[dict[str, Any]]:
        return Verdict(False)

    with pytest.raises(AmbiguousWriteError, match="did not take effect") as caught:
        _write(clock, api, verify, policy)
    assert isinstance(caught.value.__cause__, ServerError)
    assert api.sent[-1][1] - START > 60
