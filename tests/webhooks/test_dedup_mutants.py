"""De-duplication edges that mutation testing found unchecked: the defaults, the TTL's exact
boundary (also when claims come out of time order), releases of unknown nonces, the
messages of refused settings, and what reaches Redis (key, expiry, a shared client)."""

from __future__ import annotations

import re
import sys
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from asyncwifi._extras import install_hint
from asyncwifi.errors import ConfigurationError
from asyncwifi.webhooks import MemoryDeduplicator, RedisDeduplicator

NOW = 1_700_000_000.0


def refused(what: str, value: object, kind: str = "number") -> str:
    """The one message of a count or seconds refused (``_protocol.require_positive``)."""
    return exactly(f"{what} must be a finite positive {kind}, got {value!r}")


def exactly(message: str) -> str:
    return f"^{re.escape(message)}$"


# -- memory --------------------------------------------------------------------------------------


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


# -- redis ---------------------------------------------------------------------------------------


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
