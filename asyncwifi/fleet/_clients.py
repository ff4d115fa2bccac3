"""A worker's clients: one per organization, kept between passes, over shared connections.

Each organization's :class:`~asyncwifi.Client` keeps its token and its limiter from one
pass to the next. Clients of one base URL send through one connection pool; with a
``redis://`` rate store, every client shares its key's limits in Redis (named by a hash of
the key, ``RedisStore.key_name``) over one Redis connection pool, so
several workers, and the key's other users, never exceed its 60 a minute and 15,000 a day.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from asyncwifi._client import Client
from asyncwifi._clock import Clock
from asyncwifi._transport import AiohttpTransport, Request, Response, Transport
from asyncwifi.fleet._config import Organization
from asyncwifi.ratelimit import Limits

if TYPE_CHECKING:
    from asyncwifi.ratelimit import RateStore

__all__ = ["ClientPool"]


class _SharedTransport:
    """A transport several clients send through: a client's ``aclose`` leaves it open
    (the pool closes it)."""

    __slots__ = ("inner",)

    def __init__(self, inner: Transport) -> None:
        self.inner = inner

    async def send(self, request: Request) -> Response:
        return await self.inner.send(request)

    async def aclose(self) -> None:
        """Nothing: the connections are the pool's."""


class ClientPool:
    """The clients of a worker's organizations (module docstring)."""

    def __init__(
        self,
        *,
        rate_store: str | None = None,
        clock: Clock | None = None,
        max_connections: int = 64,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._rate_store = rate_store
        self._clock = clock
        self._max_connections = max_connections
        self._environ = environ
        self._clients: dict[str, Client] = {}
        self._transports: dict[str, AiohttpTransport] = {}
        self._redis: Any = None

    def client(self, org: Organization) -> Client:
        """The organization's open client (made on first use; a secret read from the
        environment then)."""
        client = self._clients.get(org.organization)
        if client is not None:
            return client
        transport = self._transports.get(org.base_url)
        if transport is None:
            transport = AiohttpTransport(org.base_url, max_connections=self._max_connections)
            self._transports[org.base_url] = transport
        client = Client(
            org.client_key,
            org.secret(self._environ).reveal(),
            base_url=org.base_url,
            organization=org.organization,
            allow_http=org.allow_http,
            clock=self._clock,
            rate_store=self._store(org.client_key),
            # the pass reports a spent day (or month's allowance) to its workflow, which
            # waits for the reset
            limits=Limits(on_exhausted="raise", month=org.allowance),
            transport=_SharedTransport(transport),
        )
        client.open()
        self._clients[org.organization] = client
        return client

    async def drop(self, organization: str) -> None:
        """Close an organization's client (its key was refused: the next pass logs in
        afresh, with the secret read again)."""
        client = self._clients.pop(organization, None)
        if client is not None:
            await client.aclose()

    def _store(self, client_key: str) -> RateStore | None:
        if self._rate_store is None:
            return None
        from asyncwifi.ratelimit import RedisStore, redis_client

        if self._redis is None:  # one connection pool for every key's store
            self._redis = redis_client(self._rate_store, "fleet worker --rate-store")
        return RedisStore.for_key(self._redis, client_key)

    async def aclose(self) -> None:
        """Close every client, then the shared connections."""
        clients, self._clients = list(self._clients.values()), {}
        await asyncio.gather(*(c.aclose() for c in clients), return_exceptions=True)
        transports, self._transports = list(self._transports.values()), {}
        for transport in transports:
            await transport.aclose()
        if self._redis is not None:
            redis, self._redis = self._redis, None
            await redis.aclose()
