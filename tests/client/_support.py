"""Helpers shared by the client's behaviour tests (imported, not a conftest)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from asyncwifi import Client, Limits, RetryPolicy
from asyncwifi.testing import Simulator

#: clock seconds per real second: a minute lasts 0.6 s
SPEED = 100.0

#: limits lifted (the gateway's too): for tests about something other than the limits
NO_LIMITS = Limits(minute=None, day=None)


def client_for(sim: Simulator, base_url: str | None = None, **options: Any) -> Client:
    """A client of ``sim`` (or of ``base_url``: a server in front of it) on the simulator's
    clock, with fast retries."""
    options.setdefault("clock", sim.clock)
    options.setdefault("organization", sim.organization)
    options.setdefault("retry", RetryPolicy(backoff_base=0.05, backoff_max=0.5))
    url = base_url or sim.base_url
    return Client(sim.client_key, sim.client_secret, base_url=url, allow_http=True, **options)


def scroll_tasks() -> list[asyncio.Task[Any]]:
    """Background scroll tasks still alive (a leak when a stream was left)."""
    return [
        t
        for t in asyncio.all_tasks()
        if t.get_name().startswith("asyncwifi-scroll") and not t.done()
    ]


async def stop_consumer(
    how: str, consume: Callable[[], Awaitable[None]], started: Callable[[], Awaitable[object]]
) -> None:
    """End ``consume`` the way a user's loop may: ``cancel`` it once ``started()`` returns,
    let it ``raise`` (a RuntimeError), or run it to its own end (``break``/``end``)."""
    if how == "cancel":
        task = asyncio.create_task(consume())
        await started()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    elif how == "raise":
        with pytest.raises(RuntimeError):
            await consume()
    else:
        await consume()
