"""Late events: events that reach the platform after their own time (a visit written when
the guest leaves, an access point uploading after an outage) are stored exactly once by a
daemon polling every second, on the flat and nested record shapes, by the lookback that
re-reads each span of event time once more when it is a lookback old; one later than the
lookback is found by the audit, stored, and counted apart (metric, and a warning said
once); the re-reads cost at most one request a poll.

Counts and order, not times: "as soon as they are a lookback old" is "by the first to the
third lookback after the events appeared" (one every half lookback, 5 clock minutes)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable
from datetime import UTC, datetime
from typing import Any, NamedTuple

import pytest

from asyncwifi import Client, ScaledClock
from asyncwifi.engine import Destination, EventFeed, Write, open_destination
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.sync._metrics import SyncMetrics
from asyncwifi.testing import Simulator
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests.sync.conftest import SPEED, Recording, shape_options

SINCE = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
#: real seconds a wait may take before the test fails
DEADLINE = 30.0


@contextlib.asynccontextmanager
async def platform(shape: str, events: int, speed: float = SPEED) -> AsyncIterator[Simulator]:
    """A simulator whose clock starts an hour after its events, and a client on it."""
    clock = ScaledClock(speed, start=DEFAULT_EVENTS_END + 3600)
    options: dict[str, Any] = {"events": events, "contacts": 20, "rate_limit_mode": "off"}
    async with Simulator(clock=clock, **options, **shape_options(shape)) as sim:
        yield sim


async def stored(
    reader: Destination, want: set[str], task: asyncio.Task[Any] | None = None
) -> None:
    """Wait until the database holds exactly ``want`` (fail at the deadline)."""
    deadline = time.monotonic() + DEADLINE
    held: set[str] = set()
    while time.monotonic() < deadline:
        if task is not None and task.done():
            task.result()
            pytest.fail("the sync ended while it should follow")
        held = await reader.ids("events")
        if held == want:
            return
        await asyncio.sleep(0.01)
    pytest.fail(f"not stored: {len(want - held)} missing, {len(held - want)} unexpected")


class Watching(Recording):
    """A recording store that also notes, for each event, how many lookback requests the
    sync had spent when the event was handed over for writing."""

    def __init__(self, inner: Destination) -> None:
        super().__init__(inner)
        self.syncer: Syncer | None = None
        self.requests_at: dict[str, int] = {}

    async def write(self, write: Write, after: Awaitable[object] | None = None) -> int:
        if write.table == "events" and self.syncer is not None:
            spent = self.syncer.stats.lookback_requests
            for row in write.rows:
                self.requests_at.setdefault(str(row[0]), spent)
        return await super().write(write, after)


def once(store: Recording, sim: Simulator) -> None:
    """Every event of the simulator written exactly once (none twice, none missing)."""
    twice = [i for i, n in Counter(store.events).items() if n > 1]
    assert not twice, f"{len(twice)} written twice"
    assert set(store.events) == set(sim.data.event_ids())


CASES = [("sqlite", "nested"), ("sqlite", "flat"), ("postgresql", "flat")]
ROUNDS = 3


@pytest.mark.parametrize(("db_url", "shape"), CASES, indirect=["db_url"])
async def test_events_five_minutes_late_are_stored_exactly_once(db_url: str, shape: str) -> None:
    # 5,500 events, then three rounds of 100 appearing 5 minutes after their own time (the
    # issue's run had five: each round is the same case, and the suite must stay short)
    async with platform(shape, events=5_500) as sim, sim.client() as api:
        reader = open_destination(db_url, organization=sim.organization)
        await reader.open()
        store = Watching(open_destination(db_url))
        options = SyncOptions(since=SINCE, poll_interval=1.0, refresh_every=1e9)
        syncer = store.syncer = Syncer(api, store, options=options)  # a 10 min lookback
        task = asyncio.create_task(syncer.run_forever())
        try:
            await stored(reader, set(sim.data.event_ids()), task)
            stats = syncer.stats
            for _ in range(ROUNDS):
                now = sim.clock.now()
                sent = stats.lookback_requests
                late = sim.data.add_events(100, at=now - 310, until=now - 300)  # 5 min late
                sim.data.add_events(3)  # and some on time
                await stored(reader, set(sim.data.event_ids()), task)
                # found by the final re-read of their time, sent once they are a lookback
                # old: (lookback - lateness) / every + 1 lookbacks after they appeared,
                # and one more that may have been on its way (a lookback every 300 s)
                assert max(store.requests_at[i] for i in late) - sent <= 3
            assert stats.late_events == {"lookback": 100 * ROUNDS, "audit": 0}
            syncer.stop()
            await asyncio.wait_for(task, timeout=10)
            once(store, sim)
            assert await reader.count("events") == 5_500 + 103 * ROUNDS

            # stopped: late events appear meanwhile, dated before its checkpoint; a new
            # daemon's first lookback finds them (and asks the database about the rest)
            now = sim.clock.now()
            late = sim.data.add_events(50, at=now - 240, until=now - 200)
            restarted = store.syncer = Syncer(api, store, options=options)
            task = asyncio.create_task(restarted.run_forever())
            await stored(reader, set(sim.data.event_ids()), task)
            restarted.stop()
            await asyncio.wait_for(task, timeout=10)
            assert restarted.stats.late_events == {"lookback": len(late), "audit": 0}
            once(store, sim)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await store.close()
            await reader.close()


@pytest.mark.parametrize("shape", ["nested", "flat"])
async def test_a_sync_run_pass_by_pass_stores_what_appeared_late_in_between(
    tmp_path: Any, shape: str
) -> None:
    # ``asyncwifi sync --once`` from cron: each pass re-reads what became a lookback old
    # since the watermark its checkpoint saved (a request), and asks the database about
    # what it finds there; a late event is stored by the first pass after it is a lookback
    # old (each event time is read twice in all, whatever the passes' rhythm)
    async with platform(shape, events=500) as sim, sim.client() as api:
        store = Recording(open_destination(f"sqlite:///{tmp_path / 'passes.db'}"))
        try:
            # late events are dated by when the first pass began, so that they lie behind
            # its forward read however long it took (a loaded machine must not move them
            # ahead of it), and appear at most a lookback after their own time
            began = sim.clock.now()
            first = Syncer(api, store, options=SyncOptions(since=SINCE))
            await first.run_once()
            late = sim.data.add_events(30, at=began - 300, until=began - 100)  # behind it
            assert sim.clock.now() - (began - 300) < 600, "the first pass took 5 minutes"
            await sim.clock.sleep(120)  # the next pass: what is a lookback old by now
            second = Syncer(api, store, options=SyncOptions(since=SINCE))
            await second.run_once()
            await sim.clock.sleep(600)  # a pass once they are all a lookback old
            third = Syncer(api, store, options=SyncOptions(since=SINCE))
            await third.run_once()
            once(store, sim)
            assert first.stats.late_events == {"lookback": 0, "audit": 0}
            found = second.stats.late_events["lookback"] + third.stats.late_events["lookback"]
            assert found == len(late)
            assert second.stats.late_events["audit"] == third.stats.late_events["audit"] == 0
            assert second.stats.lookback_requests >= 1
            assert third.stats.lookback_requests >= 1
        finally:
            await store.close()


@pytest.mark.parametrize("shape", ["nested", "flat"])
async def test_an_event_later_than_the_lookback_is_counted_shown_and_stored(
    tmp_path: Any, caplog: pytest.LogCaptureFixture, shape: str
) -> None:
    caplog.set_level(logging.INFO, logger="asyncwifi.sync")
    async with platform(shape, events=300) as sim, sim.client() as api:
        url = f"sqlite:///{tmp_path / 'late.db'}"
        reader = open_destination(url, organization=sim.organization)
        await reader.open()
        store = Recording(open_destination(url))
        # a one-minute lookback: an event 100 s late is beyond it (but within two)
        options = SyncOptions(
            since=SINCE, poll_interval=1.0, settle=10.0, lookback=60.0, refresh_every=1e9
        )
        syncer = Syncer(api, store, options=options)
        metrics = SyncMetrics(api, syncer)
        await store.open()
        task = asyncio.create_task(syncer.sync_events(follow=True))
        try:
            await stored(reader, set(sim.data.event_ids()), task)
            now = sim.clock.now()
            beyond = sim.data.add_events(1, at=now - 100)
            within = sim.data.add_events(1, at=now - 40)
            await stored(reader, set(sim.data.event_ids()), task)
            assert syncer.stats.late_events == {"lookback": 1, "audit": 1}
            metrics.refresh()
            sample = metrics.registry.get_sample_value
            assert sample("asyncwifi_sync_late_events_total", {"found_by": "audit"}) == 1
            assert sample("asyncwifi_sync_late_events_total", {"found_by": "lookback"}) == 1
            assert sample("asyncwifi_sync_lookback_requests") == syncer.stats.lookback_requests
            warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
            assert any("1 events appeared more than the lookback (60 s)" in w for w in warnings)
            assert beyond[0] in store.events
            assert within[0] in store.events
            # as late again: stored and counted, not said again (said once, with the lookback
            # that stores such events on time)
            sim.data.add_events(1, at=sim.clock.now() - 100)
            await stored(reader, set(sim.data.event_ids()), task)
            assert syncer.stats.late_events["audit"] == 2
            told = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
            assert len([w for w in told if "appeared more than the lookback" in w]) == 1
            assert any("(--lookback 5m)" in w for w in told)
            syncer.stop()
            await asyncio.wait_for(task, timeout=10)
            once(store, sim)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await store.close()
            await reader.close()


class Spent(NamedTuple):
    """What a feed spent while it followed: requests (all, and the re-reads'), re-reads
    begun (lookbacks, audits), late events found, and the clock seconds it followed."""

    requests: int
    reread_requests: int
    lookbacks: int
    audits: int
    late: int
    seconds: float

    @classmethod
    def of(cls, feed: EventFeed, now: float) -> Spent:
        rereads = feed.rereads
        late = sum(rereads.late.values())
        reads = rereads.reads
        return cls(feed.requests, rereads.requests, reads["lookback"], reads["audit"], late, now)

    def __sub__(self, before: tuple[Any, ...]) -> Spent:
        return Spent(*(a - b for a, b in zip(self, before, strict=True)))


async def follow_for(api: Client, sim: Simulator, poll: float, lookback: float) -> Spent:
    """An event feed following for 20 minutes of clock time once caught up (lookbacks and
    an audit) while events keep appearing (4 a second: the lookback's window holds a few
    thousand, less than a page); what it spent meanwhile."""
    feed = EventFeed(
        api, since=SINCE, follow=True, poll_interval=poll, settle=10.0, lookback=lookback
    )

    async def consume() -> None:
        async for _batch in feed:
            pass

    task = asyncio.create_task(consume())
    try:
        while feed.cursor.at < datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC):
            await asyncio.sleep(0.01)  # catching up
        start = sim.clock.now()
        before = Spent.of(feed, start)
        while sim.clock.now() - start < 1_200:
            # dated after the cursor (settle 10 s; times are whole seconds, rounded down)
            sim.data.add_events(40, at=sim.clock.now() - 9, until=sim.clock.now())
            await sim.clock.sleep(10)
        return Spent.of(feed, sim.clock.now()) - before
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.parametrize("shape", ["nested", "flat"])
@pytest.mark.parametrize("poll", [1.0, 60.0])
async def test_the_lookback_costs_at_most_one_request_a_poll(shape: str, poll: float) -> None:
    async with platform(shape, events=200, speed=2_000) as sim, sim.client() as api:
        spent = await follow_for(api, sim, poll, lookback=600.0)
        forward = spent.requests - spent.reread_requests  # a poll reads ahead once
        # one request a re-read (the window holds fewer than 10,000 events; one begun as
        # the count starts or ends may be answered on the other side), at most one a poll
        assert abs(spent.reread_requests - (spent.lookbacks + spent.audits)) <= 1
        assert spent.reread_requests <= forward + 1
        # a lookback every 30 clock seconds at most (every poll when polls are further
        # apart), an audit every 10 minutes: 20 minutes hold one or two
        assert spent.lookbacks <= spent.seconds / 30 + 2
        assert 1 <= spent.audits <= spent.seconds / 600 + 1
        assert spent.late == 0  # nothing was late
