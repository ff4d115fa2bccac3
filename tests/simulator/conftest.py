"""Fixtures of the simulator's conformance tests (and a check that the public plugin works)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from asyncwifi.testing import Simulator

# the public pytest plugin's factory, imported as a user of the plugin would get it
from asyncwifi.testing.pytest_plugin import simulator_factory
from tests.simulator.simhelpers import Caller

__all__ = ["simulator", "simulator_factory"]


@pytest.fixture
async def simulator(simulator_factory: Callable[..., Simulator]) -> Simulator:
    """The plugin's simulator (ScaledClock(100)), with scroll ids that outlive a loaded
    machine: these tests read pages by raw HTTP, where a page of 1,500 events can take
    longer than the 0.6 real seconds a 60 s id lives at 100x; when ids lapse is tested
    on a clock that moves only when told to."""
    sim = simulator_factory(scroll_ttl=86_400.0)
    await sim.start()
    return sim


CallerFactory = Callable[..., Awaitable[Caller]]


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


@pytest.fixture
async def caller(simulator: Simulator, session: aiohttp.ClientSession) -> Caller:
    """A logged-in caller on the default ``simulator`` fixture."""
    c = Caller(simulator, session)
    assert (await c.login()).status == 200
    return c


@pytest.fixture
async def make_caller(
    simulator_factory: Callable[..., Simulator], session: aiohttp.ClientSession
) -> CallerFactory:
    """``await make_caller(**simulator_kwargs)``: a started simulator and a logged-in caller."""

    async def factory(*, login: bool = True, **kwargs: Any) -> Caller:
        sim = simulator_factory(**kwargs)
        await sim.start()
        c = Caller(sim, session)
        if login:
            assert (await c.login()).status == 200
        return c

    return factory
