"""asyncwifi: an asyncio client SDK for the guest Wi-Fi and contact platform REST API."""

from asyncwifi import errors
from asyncwifi._clock import Clock, ScaledClock, SystemClock
from asyncwifi._version import __version__

__all__ = [
    "Clock",
    "ScaledClock",
    "SystemClock",
    "__version__",
    "errors",
]
