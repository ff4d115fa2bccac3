"""Shared helpers for the rate-limit tests: window counting and a fake gateway."""

from __future__ import annotations

import bisect
import math
import os
import socket
from collections import Counter, deque
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar, cast

import pytest

from asyncwifi.ratelimit import Limits, MemoryStore
from asyncwifi.ratelimit._log import Log, bound

T = TypeVar("T")

START = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC


def max_in_sliding(times: Sequence[float], span: float) -> int:
    """Most admissions in any half-open window [s, s + span)."""
    ts = sorted(times)
    best = 0
    for i, t in enumerate(ts):
        j = bisect.bisect_left(ts, t + span)
        best = max(best, j - i)
    return best


def max_in_fixed(times: Sequence[float], period: float) -> int:
    """Most admissions in any clock-aligned window [k * period, (k + 1) * period)."""
    if not times:
        return 0
    return max(Counter(math.floor(t / period) for t in times).values())


class FakeGateway:
    """A gateway that counts at arrival, in fixed UTC windows or a sliding window."""

    def __init__(self, count: int, period: float, *, sliding: bool) -> None:
        self.count = count
        self.period = period
        self.sliding = sliding
        self.hits: deque[float] = deque()
        self.fixed: Counter[int] = Counter()
        self.refused = 0
        self.accepted = 0

    def arrive(self, t: float) -> tuple[int, dict[str, str]]:
        if self.sliding:
            while self.hits and self.hits[0] <= t - self.period:
                self.hits.popleft()
            used = len(self.hits)
        else:
            used = self.fixed[math.floor(t / self.period)]
        if used >= self.count:
            self.refused += 1
            return 429, {"Retry-After": "1", "X-RateLimit-Remaining-Minute": "0"}
        self.accepted += 1
        if self.sliding:
            self.hits.append(t)
        else:
            self.fixed[math.floor(t / self.period)] += 1
        return 200, {
            "X-RateLimit-Limit-Minute": str(self.count),
            "X-RateLimit-Remaining-Minute": str(self.count - used - 1),
        }


def redis_available() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=0.5):
            return True
    except OSError:
        return False


def require_redis() -> None:
    """Skip (or fail under ASYNCWIFI_REQUIRE_REDIS=1) when Redis is not reachable."""
    if redis_available():
        return
    if os.environ.get("ASYNCWIFI_REQUIRE_REDIS") == "1":
        pytest.fail("Redis on 127.0.0.1:6379 is required (ASYNCWIFI_REQUIRE_REDIS=1)")
    pytest.skip("no Redis on 127.0.0.1:6379")


def done(coro: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never suspends (a ``MemoryStore``'s), run here."""
    try:
        coro.send(None)
    except StopIteration as stop:
        result: T = stop.value
        return result
    coro.close()
    raise AssertionError("the coroutine suspended")


def admit(store: MemoryStore, now: float, tag: str = "x") -> float | None:
    """One admission attempt on a memory store: the time logged, or None if refused."""
    ticket, _, _ = done(store.acquire(now, tag))
    return cast(float | None, ticket)


def earliest(log: Log) -> tuple[float, str]:
    """When the log's next admission may go, and the window that says so."""
    return bound(log.specs, log.times)


def memory(limits: Limits) -> MemoryStore:
    """A memory store bound to ``limits``."""
    store = MemoryStore()
    store.bind(limits.windows())
    return store
