"""Behaviour fixtures: a simulator on a scaled clock, served over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest

from asyncwifi import ScaledClock
from asyncwifi.testing import Simulator
from tests.client._support import SPEED


@pytest.fixture
def make_sim() -> Callable[..., AbstractAsyncContextManager[Simulator]]:
    """``async with make_sim(**simulator_options) as sim`` on a ScaledClock(SPEED)."""

    @asynccontextmanager
    async def factory(**options: Any) -> AsyncIterator[Simulator]:
        options.setdefault("clock", ScaledClock(SPEED))
        async with Simulator(**options) as sim:
            yield sim

    return factory
