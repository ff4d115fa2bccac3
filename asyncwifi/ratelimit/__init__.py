"""Rate limits: 60 a minute and 15,000 a day, exactly, across coroutines, processes and hosts:
one :class:`Scheduler` admits every request; its log lives in a :class:`RateStore`
(:class:`MemoryStore`, or :class:`RedisStore` to share a key between processes). Its
``object_gate`` counts objects and holds each request to what the month's allowance leaves.

For the SDK's other packages, not in ``__all__`` (the public surface is at its 100 names),
this door also passes: the API's limits (``API_MINUTE``, ``API_DAY``), ``ObjectGate`` and
``Reservation`` (the gate's types), ``KeepAlive`` (a scroll's place), ``Permit`` (one
admission), ``RateLimitHeaders`` (a response's limits, read once), the object kinds and
allowance terms (``ALL``, ``KINDS``, ``WEBHOOKS``, ``allowance_of``,
``SPLASH_PER_ACCESS_POINT``, ``COMPASS_PER_CONTACT``), ``VolumeSnapshot``, and the shared
store's ``key_name``, ``redis_asyncio`` and ``redis_client`` (the one Redis connection
factory, with timeouts)."""

from asyncwifi.ratelimit._headers import RateLimitHeaders as RateLimitHeaders
from asyncwifi.ratelimit._keepalive import KeepAlive as KeepAlive
from asyncwifi.ratelimit._limits import API_DAY as API_DAY
from asyncwifi.ratelimit._limits import API_MINUTE as API_MINUTE
from asyncwifi.ratelimit._limits import Limit, Limits
from asyncwifi.ratelimit._permit import Permit as Permit
from asyncwifi.ratelimit._queue import Lane
from asyncwifi.ratelimit._redis import RedisStore
from asyncwifi.ratelimit._redis import key_name as key_name
from asyncwifi.ratelimit._redis import redis_asyncio as redis_asyncio
from asyncwifi.ratelimit._redis import redis_client as redis_client
from asyncwifi.ratelimit._reserve import ObjectGate as ObjectGate
from asyncwifi.ratelimit._reserve import Reservation as Reservation
from asyncwifi.ratelimit._scheduler import Scheduler
from asyncwifi.ratelimit._snapshot import QuotaSnapshot
from asyncwifi.ratelimit._snapshot import VolumeSnapshot as VolumeSnapshot
from asyncwifi.ratelimit._store import MemoryStore, RateStore
from asyncwifi.ratelimit._truth import ThrottleEvent
from asyncwifi.ratelimit._volume import ALL as ALL
from asyncwifi.ratelimit._volume import COMPASS_PER_CONTACT as COMPASS_PER_CONTACT
from asyncwifi.ratelimit._volume import KINDS as KINDS
from asyncwifi.ratelimit._volume import SPLASH_PER_ACCESS_POINT as SPLASH_PER_ACCESS_POINT
from asyncwifi.ratelimit._volume import WEBHOOKS as WEBHOOKS
from asyncwifi.ratelimit._volume import allowance_of as allowance_of

__all__ = [
    "Lane",
    "Limit",
    "Limits",
    "MemoryStore",
    "QuotaSnapshot",
    "RateStore",
    "RedisStore",
    "Scheduler",
    "ThrottleEvent",
]
