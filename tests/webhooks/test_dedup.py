"""De-duplication by nonce: in memory (bounded, expiring) and in Redis (shared); and its
edges: the defaults, the TTL's exact boundary (also when claims come out of time order),
releases of unknown nonces, the messages of refused settings, and what reaches Redis (key,
expiry, a shared client)."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import sys
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from asyncwifi._extras import install_hint
from asyncwifi.errors import ConfigurationError
from asyncwifi.webhooks import MemoryDeduplicator, Receiver, RedisDeduplicator
from asyncwifi.webhooks._app import create_app
from tests.webhooks.helpers import (
    HEADER,
    NOW,
    SECRET,
    ClientFactory,
    auth,
    body_of,
)

# -- memory --------------------------------------------------------------------------------------


async def test_a_nonce_is_claimed_once_within_the_ttl() -> None:
    d = MemoryDeduplicator(ttl=60)
    assert await d.claim("a", NOW)
    assert not await d.claim("a", NOW + 59.9)
    assert await d.claim("b", NOW + 1)


async def test_a_nonce_can_be_claimed_again_after_the_ttl() -> None:
    d = MemoryDeduplicator(ttl=60)
    assert await d.claim("a", NOW)
    assert await d.claim("a", NOW + 60)
    assert not await d.claim("a", NOW + 61)


async def test_expired_nonces_are_dropped_from_memory() -> None:
    d = MemoryDeduplicator(ttl=10)
    for i in range(100):
        await d.claim(f"n{i}", NOW + i * 0.01)
    assert len(d) == 100
    await d.claim("late", NOW + 100)
    assert len(d) == 1


async def test_memory_is_bounded_and_forgets_the_oldest_first() -> None:
    d = MemoryDeduplicator(ttl=3600, max_entries=3)
    for nonce in "abcd":
        assert await d.claim(nonce, NOW)
    assert len(d) == 3
    assert not await d.claim("d", NOW)
    assert await d.claim("a", NOW)  # forgotten when "d" came in


async def test_a_released_nonce_can_be_claimed_again() -> None:
    d = MemoryDeduplicator()
    assert await d.claim("a", NOW)
    await d.release("a")
    assert await d.claim("a", NOW)


def test_a_non_positive_ttl_is_refused() -> None:
    with pytest.raises(ConfigurationError):
        MemoryDeduplicator(ttl=0)
    with pytest.raises(ConfigurationError):
        MemoryDeduplicator(max_entries=0)


# -- redis ---------------------------------------------------------------------------------------


def _redis_reachable() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.fixture
async def redis_prefix() -> AsyncIterator[str]:
    """A unique key prefix; its keys are deleted afterwards (never FLUSHALL)."""
    if not _redis_reachable():
        if os.environ.get("ASYNCWIFI_REQUIRE_REDIS") == "1":
            pytest.fail("Redis on 127.0.0.1:6379 is required (ASYNCWIFI_REQUIRE_REDIS=1)")
        pytest.skip("Redis on 127.0.0.1:6379 is unreachable")
    import redis.asyncio as aioredis

    prefix = f"asyncwifi-test:webhooks:{uuid.uuid4().hex}:"
    yield prefix
    client: Any = aioredis.Redis.from_url("redis://127.0.0.1:6379/0")
    keys = [key async for key in client.scan_iter(match=prefix + "*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


@pytest.mark.redis
async def test_redis_claims_a_nonce_once_and_releases_it(redis_prefix: str) -> None:
    d = RedisDeduplicator(ttl=60, prefix=redis_prefix)
    try:
        assert await d.claim("a", NOW)
        assert not await d.claim("a", NOW)
        await d.release("a")
        assert await d.claim("a", NOW)
    finally:
        await d.aclose()


@pytest.mark.redis
async def test_redis_nonces_expire_after_the_ttl(redis_prefix: str) -> None:
    d = RedisDeduplicator(ttl=0.15, prefix=redis_prefix)
    try:
        assert await d.claim("a", NOW)
        assert not await d.claim("a", NOW)
        await asyncio.sleep(0.3)
        assert await d.claim("a", NOW)
    finally:
        await d.aclose()


@pytest.mark.redis
async def test_two_receivers_behind_a_load_balancer_process_a_nonce_once(
    redis_prefix: str, make_client: ClientFactory
) -> None:
    handled: list[tuple[int, str | None]] = []
    clients = []
    receivers = []
    for index in range(2):
        r = Receiver(SECRET, header_name=HEADER, dedup=RedisDeduplicator(prefix=redis_prefix))
        r.fallback(lambda p, c, index=index: handled.append((index, p.nonce)))
        receivers.append(r)
        clients.append(await make_client(create_app(r)))
    try:
        body = body_of(nonce="shared-1")
        first = await clients[0].post("/webhooks", data=body, headers=auth())
        second = await clients[1].post("/webhooks", data=body, headers=auth())
        assert (first.status, await first.json()) == (200, {"status": "handled"})
        assert (second.status, await second.json()) == (200, {"status": "duplicate"})
        assert handled == [(0, "shared-1")]
        # Another receiver sharing the prefix but not this one's: a fresh nonce is handled.
        third = await clients[1].post("/webhooks", data=body_of(nonce="shared-2"), headers=auth())
        assert third.status == 200
        assert handled[-1] == (1, "shared-2")
    finally:
        for r in receivers:
            await r.aclose()


@pytest.mark.redis
async def test_a_redis_outage_answers_503_and_the_server_keeps_serving(
    redis_prefix: str, make_client: ClientFactory
) -> None:
    import redis.asyncio as aioredis

    broken: Any = aioredis.Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.2)
    r = Receiver(SECRET, header_name=HEADER, dedup=RedisDeduplicator(client=broken))
    r.fallback(lambda p, c: None)
    client = await make_client(create_app(r))
    try:
        response = await client.post("/webhooks", data=body_of(), headers=auth())
        assert response.status == 503
        assert (await response.json())["message"] == "de-duplication store unavailable"
        health = await client.get("/healthz")
        assert health.status == 200
    finally:
        await broken.aclose()


def refused(what: str, value: object, kind: str = "number") -> str:
    """The one message of a count or seconds refused (``_protocol.require_positive``)."""
    return exactly(f"{what} must be a finite positive {kind}, got {value!r}")


def exactly(message: str) -> str:
    return f"^{re.escape(message)}$"


# -- memory: the edges (defaults, the TTL's exact boundary, messages) ----------------------------


async def test_the_default_ttl_is_one_hour() -> None:
    d = MemoryDeduplicator()
    assert await d.claim("a", NOW)
    assert not await d.claim("a", NOW + 3599.999)
    assert await d.claim("a", NOW + 3600.0)


async def test_the_default_bound_is_100_000_nonces() -> None:
    d = MemoryDeduplicator()
    for i in range(100_000):
        d.claim_now(f"n{i}", NOW)
    assert len(d) == 100_000
    assert not await d.claim("n0", NOW)  # still remembered: the bound is not reached yet
    assert await d.claim("one more", NOW)
    assert len(d) == 100_000
    assert await d.claim("n0", NOW)  # the oldest was forgotten for "one more"


async def test_a_nonce_expiring_right_now_is_dropped_from_memory() -> None:
    d = MemoryDeduplicator(ttl=10)
    assert await d.claim("a", NOW)
    assert await d.claim("b", NOW + 10)  # "a" expires at this very moment
    assert len(d) == 1


async def test_the_ttl_boundary_holds_when_claims_come_out_of_time_order() -> None:
    d = MemoryDeduplicator(ttl=60)
    assert await d.claim("late", NOW + 10)  # a clock that stepped back between two claims
    assert await d.claim("early", NOW)
    assert not await d.claim("early", NOW + 59.9)
    assert await d.claim("early", NOW + 60)  # its ttl is over, though "late" is kept


async def test_releasing_a_nonce_that_is_not_held_is_harmless() -> None:
    d = MemoryDeduplicator(max_entries=1)
    assert await d.claim("a", NOW)
    assert await d.claim("b", NOW)  # "a" is forgotten early (the bound)
    await d.release("a")  # its processing failed later: nothing to forget, no error
    await d.release("never-seen")
    assert len(d) == 1
    assert not await d.claim("b", NOW)


async def test_a_sub_second_ttl_and_a_single_entry_are_accepted() -> None:
    d = MemoryDeduplicator(ttl=0.5, max_entries=1)
    assert d.ttl == 0.5
    assert await d.claim("a", NOW)
    assert not await d.claim("a", NOW + 0.4)
    assert await d.claim("a", NOW + 0.5)


def test_refused_settings_say_what_is_wrong() -> None:
    ttl = "the de-duplication ttl"
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ConfigurationError, match=refused(ttl, bad)):
            MemoryDeduplicator(ttl=bad)
        with pytest.raises(ConfigurationError, match=refused(ttl, bad)):
            RedisDeduplicator(ttl=bad, client=object())  # type: ignore[arg-type]
    for bad_count in (0, 2.5):
        with pytest.raises(ConfigurationError, match=refused("max_entries", bad_count, "integer")):
            MemoryDeduplicator(max_entries=bad_count)  # type: ignore[arg-type]


def test_without_the_redis_extra_the_error_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "redis.asyncio", None)  # import redis.asyncio fails
    with pytest.raises(
        ConfigurationError,
        match=exactly(f"RedisDeduplicator needs redis: {install_hint('redis')}"),
    ):
        RedisDeduplicator()


# -- redis: the edges (what reaches it: key, expiry, a shared client) ----------------------------


class RecordingRedis:
    """Stands in for ``redis.asyncio.Redis``: records the commands, keeps keys in a dict."""

    def __init__(self) -> None:
        self.sets: list[tuple[str, bytes, dict[str, Any]]] = []
        self.keys: dict[str, bytes] = {}
        self.closed = False

    async def set(self, key: str, value: bytes, **options: Any) -> bool | None:
        self.sets.append((key, value, options))
        if options.get("nx") and key in self.keys:
            return None
        self.keys[key] = value
        return True

    async def delete(self, key: str) -> int:
        return 1 if self.keys.pop(key, None) is not None else 0

    async def aclose(self) -> None:
        self.closed = True


async def test_the_set_sent_for_a_claim_has_the_ttl_in_milliseconds() -> None:
    fake = RecordingRedis()
    d = RedisDeduplicator(client=fake)  # type: ignore[arg-type]
    assert await d.claim("a", NOW)
    assert fake.sets == [("asyncwifi:webhooks:nonce:a", b"1", {"nx": True, "px": 3_600_000})]
    short = RedisDeduplicator(ttl=0.0002, prefix="p:", client=fake)  # type: ignore[arg-type]
    assert await short.claim("b", NOW)
    assert fake.sets[-1][2] == {"nx": True, "px": 1}  # at least 1 ms: Redis refuses PX 0


async def test_a_shared_client_is_not_closed_by_aclose() -> None:
    fake = RecordingRedis()
    d = RedisDeduplicator(client=fake)  # type: ignore[arg-type]
    await d.aclose()
    assert not fake.closed


@pytest.fixture
async def redis_client(redis_url: str) -> AsyncIterator[Any]:
    """A client of the machine's Redis; the keys of the test's nonces are deleted after."""
    import redis.asyncio as aioredis

    client: Any = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


@pytest.mark.redis
async def test_redis_keeps_a_claim_under_the_default_prefix_for_the_ttl(
    redis_client: Any,
) -> None:
    nonce = f"mutants-{uuid.uuid4().hex}"
    key = "asyncwifi:webhooks:nonce:" + nonce
    d = RedisDeduplicator(ttl=60)
    try:
        assert await d.claim(nonce, NOW)
        assert await redis_client.exists(key) == 1
        assert 59_000 < await redis_client.pttl(key) <= 60_000
        await d.release(nonce)
        assert await redis_client.exists(key) == 0
    finally:
        await redis_client.delete(key)
        await d.aclose()
