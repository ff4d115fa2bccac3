"""Where a sync :class:`~asyncwifi.sync.Budget` keeps what was spent today: shared in Redis.

Several processes syncing with one API key (or one daemon restarted mid-day) must not each
take the whole share of the day: with a :class:`RedisLedger` they add what they spend to
one Redis hash per UTC day (``HINCRBY``; it expires two days later) and read back the
totals. Redis unreachable: the budget goes on with its own counts and says so, never
stopping the sync (the gateway's own limits still hold the key to its quota).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from asyncwifi._auth import check_url
from asyncwifi.errors import ValidationError
from asyncwifi.ratelimit._redis import check_shared_key, redis_asyncio

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["BudgetLedger", "RedisLedger", "key_name"]

#: a day's hash outlives its day (a process whose clock lags still finds it)
_TTL = 2 * 86_400


def key_name(client_key: str) -> str:
    """The name a shared budget of API key ``client_key`` goes by (not the key itself)."""
    return "k-" + hashlib.sha256(client_key.encode()).hexdigest()[:16]


class BudgetLedger(Protocol):
    """Shared per-day counts of requests spent, per resource."""

    async def add(self, day: int, spent: Mapping[str, int]) -> dict[str, int]:
        """Add ``spent`` to UTC day ``day`` (days since the epoch); the day's totals."""
        ...

    async def aclose(self) -> None:
        """Release the connection."""
        ...


class RedisLedger:
    """A :class:`BudgetLedger` in Redis (``redis.asyncio``): one hash per key and day.

    ``url_or_client`` is a ``redis://`` URL (the ledger owns and closes that client) or a
    ``redis.asyncio.Redis`` (left open); ``key`` names the shared budget (every process of
    one API key must use the same; :func:`key_name` derives one). ``op_timeout`` bounds
    each call (real seconds).
    """

    def __init__(
        self,
        url_or_client: str | Redis,
        *,
        key: str,
        prefix: str = "asyncwifi:budget:",
        op_timeout: float = 2.0,
    ) -> None:
        check_shared_key(key, "RedisLedger")
        if not op_timeout > 0:
            raise ValidationError("op_timeout must be > 0")
        redis = redis_asyncio("RedisLedger")
        if isinstance(url_or_client, str):
            check_url(url_or_client, "Redis")
        self._owns = isinstance(url_or_client, str)
        self._client: Any = (
            redis.Redis.from_url(url_or_client) if isinstance(url_or_client, str) else url_or_client
        )
        self.key = key
        self.prefix = prefix
        self.op_timeout = op_timeout

    def __repr__(self) -> str:
        return f"RedisLedger(key={self.key!r})"

    async def add(self, day: int, spent: Mapping[str, int]) -> dict[str, int]:
        name = f"{self.prefix}{{{self.key}}}:{day}"

        async def run() -> Any:
            async with self._client.pipeline(transaction=True) as pipe:
                for resource, count in spent.items():
                    if count:
                        pipe.hincrby(name, resource, count)
                pipe.expire(name, _TTL)
                pipe.hgetall(name)
                return await pipe.execute()

        results = await asyncio.wait_for(run(), self.op_timeout)
        totals: dict[bytes | str, bytes | str] = results[-1]
        return {_text(k): int(v) for k, v in totals.items()}

    async def aclose(self) -> None:
        if self._owns:
            await self._client.aclose()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
