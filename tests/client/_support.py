"""Helpers shared by the client's behaviour tests (imported, not a conftest)."""

from __future__ import annotations

import asyncio
from typing import Any

from asyncwifi import Client, Limits, RetryPolicy
from asyncwifi.testing import Simulator

#: clock seconds per real second: a minute lasts 0.6 s
SPEED = 100.0

#: limits lifted (the gateway's too): for tests about something other than the limits
NO_LIMITS = Limits(minute=None, day=None)


def client_for(sim: Simulator, **options: Any) -> Client:
    """A client of ``sim`` on the simulator's clock, with fast retries."""
    options.setdefault("clock", sim.clock)
    options.setdefault("organization", sim.organization)
    options.setdefault("retry", RetryPolicy(backoff_base=0.05, backoff_max=0.5))
    return Client(
        sim.client_key, sim.client_secret, base_url=sim.base_url, allow_http=True, **options
    )


def scroll_tasks() -> list[asyncio.Task[Any]]:
    """Background scroll tasks still alive (a leak when a stream was left)."""
    return [
        t
        for t in asyncio.all_tasks()
        if t.get_name().startswith("asyncwifi-scroll") and not t.done()
    ]
