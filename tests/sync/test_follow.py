"""The sync follows new events as they appear, over real HTTP, on every record shape: events
added to the simulator while the daemon runs are stored exactly once (none lost, none
delivered twice), a follower with nothing new asks about once per ``poll_interval``, and a
new Syncer on the same store picks up from the checkpoint what was added meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from asyncwifi import Client, ScaledClock
from asyncwifi.engine import Destination, EventFeed, open_destination
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.testing import Simulator
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests.sync.conftest import SPEED, Recording, shape_options

SINCE = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
#: clock seconds between polls, and the age before an event is taken (whole seconds at
#: least: the simulator's event times are whole seconds, rounded down)
POLL, SETTLE = 20.0, 10.0
SHAPES = ("nested", "flat", "dated")
#: real seconds a wait may take before the test fails
DEADLINE = 30.0


@contextlib.asynccontextmanager
async def following(shape: str) -> AsyncIterator[tuple[Simulator, Client]]:
    """A simulator whose clock starts just after its events (fast: SPEED clock seconds per
    real second), and a client on the same clock."""
    clock = ScaledClock(SPEED, start=DEFAULT_EVENTS_END + 60)
    options: dict[str, Any] = {"events": 2_000, "contacts": 50, "rate_limit_mode": "off"}
    async with (
        Simulator(clock=clock, **options, **shape_options(shape)) as sim,
        sim.client() as api,
    ):
        yield sim, api


def options() -> SyncOptions:
    return SyncOptions(
        since=SINCE,
        poll_interval=POLL,
        settle=SETTLE,
        page_size=500,
        refresh_every=1e9,  # contacts, hotspots, segments: once, at the start
    )


async def stored_exactly(reader: Destination, sim: Simulator, task: asyncio.Task[Any]) -> None:
    """Wait until the database holds exactly the simulator's events (fail at the deadline,
    or at once if the sync ended). ``reader`` is a store of its own: a store is not for
    concurrent use (one PostgreSQL connection), the sync's is busy."""
    expected = set(sim.data.event_ids())
    deadline = time.monotonic() + DEADLINE
    held: set[str] = set()
    while time.monotonic() < deadline:
        if task.done():
            task.result()
            pytest.fail("the sync ended while it should follow")
        held = await reader.ids("events")
        if held == expected:
            return
        await asyncio.sleep(0.02)
    missing, extra = len(expected - held), len(held - expected)
    pytest.fail(f"not stored after {DEADLINE} s: {missing} missing, {extra} unexpected")


async def check_exactly_once(reader: Destination, store: Recording, sim: Simulator) -> None:
    ids = sim.data.event_ids()
    assert await reader.ids("events") == set(ids)
    assert await reader.count("events") == len(ids)
    assert len(store.events) == len(set(store.events)) == len(ids)  # none delivered twice


async def stop(syncer: Syncer, task: asyncio.Task[Any]) -> Any:
    """Stop the sync; it must end by itself, without an error, within a few polls."""
    syncer.stop()
    return await asyncio.wait_for(task, timeout=5 * POLL / SPEED + 5)


# every shape with both runners on SQLite; on PostgreSQL (same feed, another store) the
# daemon on the two harsh shapes and the follower alone on the third: the suite stays fast
CASES = [
    *(("sqlite", shape, runner) for shape in SHAPES for runner in ("run_forever", "sync_events")),
    ("postgresql", "nested", "run_forever"),
    ("postgresql", "flat", "run_forever"),
    ("postgresql", "dated", "sync_events"),
]


@pytest.mark.parametrize(("db_url", "shape", "runner"), CASES, indirect=["db_url"])
async def test_new_events_are_stored_exactly_once_as_they_appear(
    db_url: str, shape: str, runner: str
) -> None:
    async with following(shape) as (sim, api):
        reader = open_destination(db_url, organization=sim.organization)
        await reader.open()
        try:
            await follow(sim, api, db_url, reader, runner)
            await restart(sim, api, db_url, reader)
        finally:
            await reader.close()


async def follow(
    sim: Simulator, api: Client, db_url: str, reader: Destination, runner: str
) -> None:
    """Follow from ``since``: the initial events, then bursts added while it runs."""
    store = Recording(open_destination(db_url))
    try:
        syncer = Syncer(api, store, options=options())
        task: asyncio.Task[Any]
        if runner == "run_forever":
            task = asyncio.create_task(syncer.run_forever())
        else:
            await store.open()  # sync_events() alone does not (run_once, run_forever do)
            task = asyncio.create_task(syncer.sync_events(follow=True))
        await stored_exactly(reader, sim, task)
        assert len(store.events) == 2_000
        # events appear while it follows: in bursts, between and during its polls
        for burst in (120, 1, 600, 35):
            sim.data.add_events(burst)
            await sim.clock.sleep(POLL * 0.7)
        await stored_exactly(reader, sim, task)
        await check_exactly_once(reader, store, sim)
        # nothing new: about one request per poll, not a loop that spins on the API (the
        # lookback's re-reads aside: test_late_events.py bounds them)
        stats = syncer.stats

        def forward() -> int:
            return stats.requests["events"] - stats.lookback_requests

        before, start = forward(), sim.clock.now()
        await sim.clock.sleep(10 * POLL)
        polls = (sim.clock.now() - start) / POLL
        # the floor is a request per poll; 2 more at most: a poll whose answer was still
        # on its way when ``before`` was read, and one due as the sleep ends
        assert forward() - before <= polls + 2
        stopped = await stop(syncer, task)
        assert stopped == (None if runner == "run_forever" else 2_756)
        assert await store.checkpoint("events") is not None
        await check_exactly_once(reader, store, sim)
    finally:
        await store.close()


async def restart(sim: Simulator, api: Client, db_url: str, reader: Destination) -> None:
    """A new Syncer on the same database, from the checkpoint: what appeared meanwhile (and
    while it runs) is stored once, and nothing stored before comes again."""
    sim.data.add_events(250)
    store = Recording(open_destination(db_url))
    store.events = sorted(await reader.ids("events"))
    try:
        await store.open()
        syncer = Syncer(api, store, options=options())
        task = asyncio.create_task(syncer.sync_events(follow=True))
        await stored_exactly(reader, sim, task)
        sim.data.add_events(40)
        await stored_exactly(reader, sim, task)
        assert await stop(syncer, task) == 290
        await check_exactly_once(reader, store, sim)
    finally:
        await store.close()


@pytest.mark.parametrize("shape", SHAPES)
async def test_a_feed_ends_at_its_until_or_at_the_horizon_it_started_with(shape: str) -> None:
    async with following(shape) as (sim, api):

        async def drain(feed: EventFeed) -> list[str]:
            async def ids() -> list[str]:
                return [r.item.id or "" async for batch in feed for r in batch.records]

            return await asyncio.wait_for(ids(), timeout=10)

        # no until, no follow: until now, the horizon when it starts (it used to read the
        # horizon anew after each window, which moves on while a window is fetched)
        feed = EventFeed(api, since=SINCE, settle=SETTLE, poll_interval=POLL)
        assert await drain(feed) == sim.data.event_ids()
        # the floor: one page (2,000 events); plus the short page that closes the first
        # window (a day, while the feed does not know the records' shape)
        assert feed.requests <= 1 + 1
        # following up to an until finer than a millisecond (the checkpoint's precision)
        later = sim.data.add_events(5)
        until = datetime.fromtimestamp(sim.clock.now() + 2 * POLL, UTC).replace(microsecond=700)
        follower = EventFeed(api, checkpoint=feed.cursor.encode(), until=until, follow=True)
        assert await drain(follower) == later
