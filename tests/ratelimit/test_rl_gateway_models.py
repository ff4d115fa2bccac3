"""The scheduler against every gateway model, over real HTTP, in scaled time.

Each model (fixed UTC minutes, fixed minutes on a skewed gateway clock, sliding, weighted
two-window estimate) gets a backlog of requests for four clock minutes. Counts only: no
429, never more than the limit in any window of the client's own admissions, and nearly
the allowed rate (the old grid cap let a sliding gateway have about 60 % of it).
"""

from __future__ import annotations

import asyncio

import pytest

from asyncwifi import Client, Limit, Limits
from asyncwifi._clock import ScaledClock
from asyncwifi.backfill import Progress
from asyncwifi.cli._progress import requests_sent
from asyncwifi.testing import Simulator
from tests._windows import most_in_window

N = 10
PERIOD = 60.0
MINUTES = 4
START = 1_709_294_400.0 - 0.5


async def backlog(model: str) -> tuple[Simulator, list[float], Client]:
    clock = ScaledClock(100, start=START)
    sent: list[float] = []
    sim = Simulator(
        clock=clock, minute_limit=N, day_limit=100_000, rate_limit_mode=model, fractional_reset=True
    )
    async with sim:
        api = Client(
            sim.client_key,
            sim.client_secret,
            base_url=sim.base_url,
            organization=sim.organization,
            allow_http=True,
            clock=clock,
            limits=Limits(minute=Limit(N, PERIOD), day=None),
            # the admission's clock time: what the windows count (the hook itself may run
            # a little later on a loaded machine, which says nothing of the scheduler)
            hooks={"request": lambda info: sent.append(info.admitted_at)},
        )
        async with api:
            until = clock.now() + MINUTES * PERIOD

            async def worker() -> None:
                while clock.now() < until:
                    await api.segments.list()

            await asyncio.gather(*(worker() for _ in range(8)))
    return sim, sent, api


@pytest.mark.parametrize("model", ["fixed", "skewed", "sliding", "weighted"])
async def test_full_rate_and_no_429_under_every_gateway_model(model: str) -> None:
    sim, sent, api = await backlog(model)
    assert sim.counters.rate_limited == 0
    # the local log is the guarantee: never more than N in any window of the period
    assert most_in_window(sent, PERIOD) <= N
    # the allowed rate, less the margin and a round trip per minute: the first minute's
    # burst plus about N a minute after it (a grid cap on a sliding gateway gets ~60 %)
    assert len(sim.admissions) >= N + 0.85 * N * (MINUTES - 1)
    # every request the gateway saw was admitted by the scheduler, the login included
    assert api.quota.admitted == len(sim.admissions)


def test_the_progress_line_counts_the_login() -> None:
    from asyncwifi.ratelimit import QuotaSnapshot

    progress = Progress(requests_run=17)
    snap = QuotaSnapshot(taken_at=0.0, limits=Limits(), admitted=18)
    assert requests_sent(progress, snap) == 18
    assert requests_sent(progress, None) == 17
