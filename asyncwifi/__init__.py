"""asyncwifi: an asyncio client SDK for the guest Wi-Fi and contact platform REST API.

The API's quota (60 requests a minute, 15,000 a day) is the only bottleneck: every request
goes through a rate-aware scheduler that never sends what the gateway would refuse.

Comments citing "spec §N" refer to section N of the platform's API reference, kept in the
repository as ``docs/reference/api.md`` (its section numbers unchanged); "gateway.md" is
``docs/reference/gateway.md``, "observed.md" (the vendor's other pages) is
``docs/reference/observed.md``, and the design notes are ``docs/design.md``.
"""

import logging

from asyncwifi import errors, models
from asyncwifi._client import Client, ClientState
from asyncwifi._clock import Clock, ScaledClock
from asyncwifi._hooks import RequestInfo, ResponseInfo, RetryInfo
from asyncwifi._retry import RetryPolicy
from asyncwifi._stream import ScrollStream, StreamOptions
from asyncwifi._transport import (
    MockTransport,
    Request,
    Response,
    Transport,
)
from asyncwifi._version import __version__
from asyncwifi.models import (
    Contact,
    Event,
    Hotspot,
    HotspotCreate,
    HotspotUpdate,
    HotspotWriteResult,
    Policy,
    Segment,
)
from asyncwifi.ratelimit import Lane, Limit, Limits, MemoryStore, QuotaSnapshot, RedisStore

# a library does not configure logging: without a handler of the application's, say nothing
logging.getLogger("asyncwifi").addHandler(logging.NullHandler())

__all__ = [
    "Client",
    "ClientState",
    "Clock",
    "Contact",
    "Event",
    "Hotspot",
    "HotspotCreate",
    "HotspotUpdate",
    "HotspotWriteResult",
    "Lane",
    "Limit",
    "Limits",
    "MemoryStore",
    "MockTransport",
    "Policy",
    "QuotaSnapshot",
    "RedisStore",
    "Request",
    "RequestInfo",
    "Response",
    "ResponseInfo",
    "RetryInfo",
    "RetryPolicy",
    "ScaledClock",
    "ScrollStream",
    "Segment",
    "StreamOptions",
    "Transport",
    "__version__",
    "errors",
    "models",
]
