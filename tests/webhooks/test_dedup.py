"""De-duplication by nonce: in memory (bounded, expiring) and in Redis (shared)."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

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
