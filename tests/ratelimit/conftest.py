"""Fixtures of the rate-limit tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from tests.ratelimit.rlhelpers import require_redis


@pytest.fixture
def prefix() -> Iterator[str]:
    """A unique key prefix, deleted afterwards (never FLUSHALL: Redis is shared)."""
    require_redis()
    p = f"asyncwifi:test:rl:{uuid.uuid4().hex[:10]}:"
    yield p
    client = redis.Redis(host="127.0.0.1", port=6379)
    keys = list(client.scan_iter(f"{p}*"))
    if keys:
        client.delete(*keys)
    client.close()
