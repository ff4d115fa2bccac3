"""The public namespace is curated: every name in ``__all__`` exists, and the list is pinned."""

from __future__ import annotations

import asyncwifi

EXPECTED = [
    "Client",
    "ClientState",
    "Clock",
    "Contact",
    "Event",
    "HookKind",
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
    "Record",
    "RedisStore",
    "Request",
    "RequestInfo",
    "Response",
    "ResponseInfo",
    "RetryInfo",
    "RetryPolicy",
    "ScaledClock",
    "ScrollPage",
    "ScrollStream",
    "Segment",
    "Transport",
    "__version__",
    "errors",
    "models",
]


def test_all_is_pinned_and_sorted() -> None:
    assert asyncwifi.__all__ == EXPECTED
    assert asyncwifi.__all__ == sorted(asyncwifi.__all__)


def test_every_public_name_exists_and_says_where_it_lives() -> None:
    for name in asyncwifi.__all__:
        value = getattr(asyncwifi, name)
        module = getattr(value, "__module__", None)
        if module is not None and isinstance(value, type):
            assert module.startswith("asyncwifi"), (name, module)


def test_the_design_cards_names_are_importable() -> None:
    from asyncwifi import Client, Limit, Limits, MemoryStore, RedisStore  # noqa: F401
    from asyncwifi.errors import (  # noqa: F401
        ApiError,
        AsyncWifiError,
        QuotaExhaustedError,
        ScrollExpiredError,
        ValidationError,
    )
    from asyncwifi.testing import Simulator  # noqa: F401

    assert asyncwifi.__version__
