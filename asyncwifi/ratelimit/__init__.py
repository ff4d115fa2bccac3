"""Rate limits: 60 a minute and 15,000 a day, exactly, across coroutines, processes and hosts.

One :class:`Scheduler` admits every request: sans-I/O window arithmetic (``_log``) and
server truth (``_truth``) under one admission path, one queue and one timer; the admission
log (with a tag per admission, counted by :meth:`Scheduler.used`) lives in a :class:`RateStore`
plug-in: :class:`MemoryStore` by default, or :class:`RedisStore` to share one key's budget
between processes and hosts.
"""

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
