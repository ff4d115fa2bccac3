"""Rate limits: 60 a minute and 15,000 a day, exactly, across coroutines, processes and hosts:
one :class:`Scheduler` admits every request; its log lives in a :class:`RateStore`
(:class:`MemoryStore`, or :class:`RedisStore` to share a key between processes)."""

from asyncwifi.ratelimit._limits import Limit, Limits
from asyncwifi.ratelimit._permit import Lane
from asyncwifi.ratelimit._redis import RedisStore
from asyncwifi.ratelimit._scheduler import Scheduler
from asyncwifi.ratelimit._snapshot import QuotaSnapshot, ThrottleEvent
from asyncwifi.ratelimit._store import MemoryStore, RateStore

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
