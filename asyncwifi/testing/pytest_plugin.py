"""pytest fixtures for testing code against the simulator.

Enable them in a ``conftest.py`` with ``pytest_plugins = ["asyncwifi.testing.pytest_plugin"]``
(needs pytest-asyncio):

- ``simulator``: a started :class:`~asyncwifi.testing.Simulator` with the default data and
  limits, on a ``ScaledClock(speed=100)`` (a minute lasts 0.6 s); share ``simulator.clock``
  with the client under test;
- ``simulator_factory``: ``async with simulator_factory(seed=3, events=50_000) as sim:``
  builds simulators with any :class:`Simulator` keywords (same default clock speed); any
  left running are stopped at teardown.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest_asyncio

from asyncwifi._clock import ScaledClock
from asyncwifi.testing._server import Simulator

#: nothing to import: pytest finds the fixtures (``simulator``, ``simulator_factory``) itself
__all__: list[str] = []

#: the clock speed of the fixtures' simulators
SPEED = 100.0


@pytest_asyncio.fixture
async def simulator() -> AsyncIterator[Simulator]:
    """A started simulator with default settings on a ScaledClock(speed=100)."""
    async with Simulator(clock=ScaledClock(SPEED)) as sim:
        yield sim


@pytest_asyncio.fixture
async def simulator_factory() -> AsyncIterator[Callable[..., Simulator]]:
    """Builds simulators (``async with simulator_factory(**kwargs) as sim``)."""
    made: list[Simulator] = []

    def factory(**kwargs: Any) -> Simulator:
        kwargs.setdefault("clock", ScaledClock(SPEED))
        sim = Simulator(**kwargs)
        made.append(sim)
        return sim

    yield factory
    for sim in made:
        await sim.stop()
