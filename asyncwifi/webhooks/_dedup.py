"""De-duplication of webhook events by ``event.nonce`` (spec §6.2: "unique event identifier").

A receiver *claims* a nonce before it processes an event; a claim that fails means the
event was seen within the TTL and is acknowledged without being processed again. When the
processing fails, the claim is *released* so that a redelivery is processed.

:class:`MemoryDeduplicator` serves one process (bounded, expiring); :class:`RedisDeduplicator`
serves several receivers behind a load balancer (one ``SET NX PX`` per event).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from asyncwifi._defaults import NONCE_PREFIX, NONCE_TTL
from asyncwifi._protocol import require_positive
from asyncwifi.errors import ConfigurationError
from asyncwifi.ratelimit import redis_client

if TYPE_CHECKING:
    import redis.asyncio

__all__ = ["Deduplicator", "MemoryDeduplicator", "RedisDeduplicator"]


@runtime_checkable
class Deduplicator(Protocol):
    """Where the nonces seen recently are remembered."""

    async def claim(self, nonce: str, now: float) -> bool:
        """Remember ``nonce``; ``False`` if it was already claimed and has not expired."""
        ...

    async def release(self, nonce: str) -> None:
        """Forget ``nonce`` (its processing failed, so a redelivery must be processed)."""
        ...

    async def aclose(self) -> None:
        """Release connections, if any."""
        ...


class MemoryDeduplicator:
    """Nonces in a dict ordered by expiry, for one process.

    Holds at most ``max_entries`` nonces: beyond that the oldest is forgotten early, which
    weakens de-duplication for the oldest events rather than growing without bound. At
    3,000 events/s, 100,000 entries cover about 33 s; size it to ``rate * ttl``.
    """

    __slots__ = ("_seen", "max_entries", "ttl")

    def __init__(self, ttl: float = NONCE_TTL, *, max_entries: int = 100_000) -> None:
        require_positive(ttl, "the de-duplication ttl", error=ConfigurationError)
        require_positive(max_entries, "max_entries", integer=True, error=ConfigurationError)
        #: seconds a nonce is remembered
        self.ttl = float(ttl)
        #: the most nonces remembered at once
        self.max_entries = max_entries
        self._seen: OrderedDict[str, float] = OrderedDict()

    def __repr__(self) -> str:
        return f"MemoryDeduplicator(ttl={self.ttl:g}, entries={len(self._seen)})"

    def __len__(self) -> int:
        return len(self._seen)

    def claim_now(self, nonce: str, now: float) -> bool:
        """The synchronous claim (sans-I/O): ``True`` if ``nonce`` is new or expired."""
        seen = self._seen
        # Entries are appended in time order, so the expired ones are at the front.
        while seen:
            oldest, expiry = next(iter(seen.items()))
            if expiry > now:
                break
            del seen[oldest]
        known = seen.get(nonce)
        if known is not None and known > now:
            return False
        seen[nonce] = now + self.ttl
        seen.move_to_end(nonce)
        while len(seen) > self.max_entries:
            seen.popitem(last=False)
        return True

    async def claim(self, nonce: str, now: float) -> bool:
        return self.claim_now(nonce, now)

    async def release(self, nonce: str) -> None:
        self._seen.pop(nonce, None)

    async def aclose(self) -> None:
        self._seen.clear()


class RedisDeduplicator:
    """Nonces in Redis (``SET key 1 NX PX ttl``), shared by every receiver that uses ``prefix``.

    The TTL runs on Redis' clock, so receivers on several hosts agree on it. ``redis`` is an
    optional extra (``pip install asyncwifi[redis]``) imported only when this class is used.
    Pass ``client`` to share an existing ``redis.asyncio.Redis`` (it is then not closed here).
    """

    __slots__ = ("_client", "_owns_client", "prefix", "ttl")

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        ttl: float = NONCE_TTL,
        prefix: str = NONCE_PREFIX,
        client: redis.asyncio.Redis | None = None,
    ) -> None:
        require_positive(ttl, "the de-duplication ttl", error=ConfigurationError)
        #: seconds a nonce is remembered (rounded to milliseconds)
        self.ttl = float(ttl)
        #: key prefix; receivers that must agree share it
        self.prefix = prefix
        if client is None:
            client = redis_client(url, "RedisDeduplicator")  # the extra, or a clear error
            self._owns_client = True
        else:
            self._owns_client = False
        self._client: Any = client

    def __repr__(self) -> str:
        # The URL may hold a password: never shown.
        return f"RedisDeduplicator(prefix={self.prefix!r}, ttl={self.ttl:g})"

    async def claim(self, nonce: str, now: float) -> bool:
        ttl_ms = max(1, round(self.ttl * 1000))
        result = await self._client.set(self.prefix + nonce, b"1", nx=True, px=ttl_ms)
        return bool(result)

    async def release(self, nonce: str) -> None:
        await self._client.delete(self.prefix + nonce)

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()
