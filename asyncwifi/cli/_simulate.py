"""``--simulate``: the embedded simulator, in this process, on a fast shared clock.

The simulator and the client share one :class:`~asyncwifi.ScaledClock`, so the gateway's
minute and day windows, the scroll's 60 s and the token's day all run ``speed`` times faster
than real time, and the client's limits are the simulator's. The seeded dataset covers the
range the command asks for (``events_per_day`` events a day), so an events backfill over
any range finds data, and the same seed gives the same events on every run (which is what
lets a killed ``--simulate`` run be resumed).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from asyncwifi._clock import Clock, ScaledClock
from asyncwifi._defaults import (
    EMBEDDED_CONTACTS,
    EMBEDDED_EVENTS_PER_DAY,
    EMBEDDED_SPEED,
    FIRST_RUN,
    SIMULATOR_SEED,
)
from asyncwifi._instant import format_instant
from asyncwifi.cli._config import shared_store
from asyncwifi.cli._exit import CliFailure, ExitCode
from asyncwifi.cli._progress import Display
from asyncwifi.ratelimit import API_DAY, API_MINUTE

if TYPE_CHECKING:
    from asyncwifi._client import Client
    from asyncwifi.testing import Simulator

__all__ = [
    "MAX_SIMULATED_EVENTS",
    "SimOptions",
    "build_simulator",
    "simulated_client",
    "simulated_clock",
    "simulated_range",
]

#: the most events an embedded simulator serves (drawn from its seed a block at a time, its
#: memory does not grow with them: 154 MB at this many); more is refused
MAX_SIMULATED_EVENTS = 20_000_000
#: the simulated venues' local times must stay inside Python's years 1..9999
SIMULATED_SPAN = (datetime(1, 1, 2, tzinfo=UTC), datetime(9999, 12, 30, tzinfo=UTC))


@dataclass
class SimOptions:
    """How ``--simulate`` builds its simulator: the simulator's defaults (the table's, which
    ``Simulator.DEFAULTS`` holds, as ``asyncwifi simulate`` and ``Simulator()`` read them);
    what the embedded mode does otherwise (its clock's speed, its data over the command's
    range) is named there too (``EMBEDDED_*``), with its reason."""

    enabled: bool = False
    #: clock seconds per real second (a day of quota passes in 86,400 / speed s)
    speed: float = EMBEDDED_SPEED
    seed: int = SIMULATOR_SEED
    #: events generated per day of the requested range
    events_per_day: int = EMBEDDED_EVENTS_PER_DAY
    contacts: int = EMBEDDED_CONTACTS
    minute_limit: int = API_MINUTE.count  # the API's, as Simulator.DEFAULTS's
    day_limit: int = API_DAY.count
    #: the clock's start (epoch seconds), for tests that need a day's end close by
    start: float | None = None


def simulated_range(
    since: datetime | None, until: datetime | None, now: float
) -> tuple[datetime, datetime]:
    """The event range to generate: the command's, else the week before ``now``."""
    end = until or datetime.fromtimestamp(now, tz=UTC)
    start = since or end - FIRST_RUN
    return start, end


def simulated_clock(options: SimOptions) -> ScaledClock:
    """The shared fast clock (started at ``options.start`` when given, else now)."""
    return ScaledClock(options.speed, start=options.start)


def build_simulator(
    options: SimOptions, *, since: datetime | None, until: datetime | None, clock: Clock
) -> Simulator:
    """The simulator ``--simulate`` runs: seeded, covering ``[since, until)``.

    Tests build the same one (same options, same range) to know exactly which ids a run
    must write: the data depends on the seed and the range only.
    """
    from asyncwifi.testing import Simulator

    start, end = simulated_range(since, until, clock.now())
    low, high = SIMULATED_SPAN
    if start < low or end > high:
        raise CliFailure(
            f"--simulate generates events from {low.date()} to {high.date()} only "
            "(the venues' local times must stay inside years 1..9999); pick a range inside",
            ExitCode.USAGE,
        )
    days = (end - start).total_seconds() / 86_400.0
    events = round(options.events_per_day * days)
    if since is None and until is None:
        # a command that reads no events: the standalone's total, for a quick start-up
        events = min(events, Simulator.DEFAULTS.events)
    if events > MAX_SIMULATED_EVENTS:
        raise CliFailure(
            f"--simulate would generate {events:,} events (more than {MAX_SIMULATED_EVENTS:,}); "
            "use a shorter range or a smaller --sim-events-per-day",
            ExitCode.USAGE,
        )
    return Simulator(
        seed=options.seed,
        clock=clock,
        events=events,
        events_start=start,
        events_end=end,
        contacts=options.contacts,
        minute_limit=options.minute_limit,
        day_limit=options.day_limit,
        # one clock second lasts 1/speed real seconds: whole-second resets would overshoot
        fractional_reset=True,
    )


@contextlib.asynccontextmanager
async def simulated_client(
    options: SimOptions,
    display: Display,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    on_exhausted: Literal["wait", "raise"] = "wait",
    max_wait: float | None = None,
    rate_store: str | None = None,
    month: Mapping[str, int] | None = None,
) -> AsyncIterator[Client]:
    """A simulator started in-process and a client opened on it, both on one fast clock
    (``rate_store``: see ``App.client``; ``month``: the object allowance, ``Limits.month``)."""

    clock = simulated_clock(options)
    simulator = build_simulator(options, since=since, until=until, clock=clock)
    display.info("simulator", "simulating: generating the embedded simulator's data")
    # encode the first chunks the cache keeps before serving, so that the first pages never
    # stall the loop that also runs the client (a stall would look like a slow client to
    # the scroll); a stop meanwhile (the task cancelled) ends the thread too, at once
    stop = threading.Event()
    try:
        await asyncio.to_thread(simulator.data.events.warm, stop)
    finally:
        stop.set()
    async with simulator as sim:
        data = sim.data
        start, end = simulated_range(since, until, clock.now())
        display.info(
            "simulator",
            f"simulating: embedded simulator at {sim.base_url} (seed {options.seed}, "
            f"{len(data.events):,} events from {format_instant(start, 'seconds')} to "
            f"{format_instant(end, 'seconds')}, clock x{options.speed:g}); no account is used",
            base_url=sim.base_url,
            seed=options.seed,
            events=len(data.events),
            speed=options.speed,
        )
        async with sim.client(
            on_exhausted=on_exhausted,
            max_wait=max_wait,
            month=month,
            rate_store=shared_store(rate_store, sim.client_key),
        ) as api:
            yield api
