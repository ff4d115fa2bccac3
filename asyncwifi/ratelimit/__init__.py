"""Rate limits: 60 a minute and 15,000 a day, exactly, across coroutines, processes and hosts.

Sans-I/O window arithmetic (``_window``) and server truth (``_truth``) under an asyncio
:class:`Scheduler` (its admission loop in ``_admission``);
the admission log lives in a :class:`Store` (:class:`MemoryStore` by default, or
:class:`RedisStore` to share one key's budget between processes and hosts).
"""

from asyncwifi.ratelimit._headers import ObjectCounts, RateLimitHeaders
from asyncwifi.ratelimit._limits import Limit, Limits, WindowSpec
from asyncwifi.ratelimit._permit import Lane, Permit
from asyncwifi.ratelimit._redis import RedisStore
from asyncwifi.ratelimit._scheduler import Scheduler
from asyncwifi.ratelimit._snapshot import QuotaSnapshot, ThrottleEvent, WindowSnapshot
from asyncwifi.ratelimit._store import MemoryStore, Store, WindowUsage
from asyncwifi.ratelimit._window import WindowLog

__all__ = [
    "Lane",
    "Limit",
    "Limits",
    "MemoryStore",
    "ObjectCounts",
    "Permit",
    "QuotaSnapshot",
    "RateLimitHeaders",
    "RedisStore",
    "Scheduler",
    "Store",
    "ThrottleEvent",
    "WindowLog",
    "WindowSnapshot",
    "WindowSpec",
    "WindowUsage",
]
