"""A change of plan never drops a read it owes (issue 39): the daemon moves between the
object plan's rungs (three reads, two, one a lookback late) by ending its event follower
and starting a new one from the checkpoint. Whenever that happens (before the re-read of a
span of late events, in the middle of it, or after it, while the next span is still owed)
every event that appeared up to the lookback late is stored, exactly once, on the flat and
nested record shapes, both ways (to the one-read rung and back).

Counts and order, not times: the clock is scaled, and each moment is reached by what the
store saw (a write of late rows, the watermark saved), not by a real-time sleep."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import Any

import pytest

from asyncwifi import Limits
from asyncwifi._cursor import TimeCursor
from asyncwifi.engine import Destination, Write, open_destination
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.sync._options import DEFAULTS
from asyncwifi.sync._plan import Observed, SyncPlan, plan_sync
from asyncwifi.testing import Simulator
from asyncwifi.testing._data import DEFAULT_EVENTS_END
from tests.sync.conftest import SPEED, GearedClock, Recording, shape_options
from tests.sync.test_late_events import DEADLINE, SINCE, once, stored

LOOKBACK = 600.0
#: the reference organization's rates: the allowance alone picks the rung
ORGANIZATION = Observed(
    events_per_day=300, contacts=2_000, contact_changes_per_day=20, hotspots=10, segments=6
)
#: an allowance per rung (0.9 of it is the share)
ALLOWANCES = {"audited": 100_000, "reread": 25_000, "delayed": 20_000}
#: a re-read of more late events than a page takes two requests: one can be cut between
PAGE = 20


def options() -> SyncOptions:
    return SyncOptions(since=SINCE, poll_interval=1.0, refresh_every=1e9, page_size=PAGE)


def plan_for(late: str) -> SyncPlan:
    chosen = plan_sync(
        ORGANIZATION,
        allowance=Limits(month=ALLOWANCES[late]).allowance,
        share=0.9,
        insisted=options().insisted,
        defaults=DEFAULTS,
    )
    assert chosen.late == late
    assert chosen.lookback == LOOKBACK
    return chosen


class Hooked(Recording):
    """A recording store that calls ``hook(ids)`` with the event ids of each write."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.hook: Callable[[list[str]], None] | None = None

    async def write(self, write: Write, after: Awaitable[object] | None = None) -> int:
        if write.table == "events" and write.rows and self.hook is not None:
            self.hook([str(row[0]) for row in write.rows])
        return await super().write(write, after)


class Daemon:
    """The follower of a daemon, restarted on a new plan as ``Syncer.run_forever`` does at
    a re-plan whose reads differ: the running one is cancelled (its writes in flight
    commit), the new one starts from the checkpoint."""

    def __init__(self, syncer: Syncer) -> None:
        self.syncer = syncer
        self.task: asyncio.Task[int] | None = None

    def start(self, plan: SyncPlan) -> None:
        self.syncer.plan = plan
        self.task = asyncio.create_task(self.syncer.sync_events(follow=True))

    def cut(self) -> None:
        """End the follower now (at its next wait): what it has not written is not saved."""
        assert self.task is not None
        self.task.cancel()

    async def switch(self, plan: SyncPlan) -> None:
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        self.start(plan)

    async def close(self) -> None:
        if self.task is not None:
            self.syncer.stop()
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)


async def saved(store: Recording) -> TimeCursor:
    """The events checkpoint as stored: its cursor (``at``) and watermark (``reread``)."""
    text = await store.checkpoint("events")
    assert text is not None
    return TimeCursor.start("events", text, SINCE)


async def until(condition: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not await condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def epoch(t: datetime | None) -> float:
    assert t is not None
    return t.timestamp()


@contextlib.asynccontextmanager
async def geared(shape: str) -> AsyncIterator[tuple[Simulator, GearedClock]]:
    """A simulator (300 events, 20 contacts, no gateway limits) whose clock starts an
    hour after its events, at the suite's speed; ``SLOW`` while a moment must be caught."""
    clock = GearedClock(SPEED, start=DEFAULT_EVENTS_END + 3_600)
    options: dict[str, Any] = {"events": 300, "contacts": 20, "rate_limit_mode": "off"}
    async with Simulator(clock=clock, **options, **shape_options(shape)) as sim:
        yield sim, clock


@contextlib.asynccontextmanager
async def harness(
    shape: str, tmp_path: Any
) -> AsyncIterator[tuple[Simulator, GearedClock, Destination, Hooked, Daemon]]:
    """A geared simulator, a reader of the database, a hooked store, and a daemon on it."""
    async with geared(shape) as (sim, clock), sim.client() as api:
        url = f"sqlite:///{tmp_path / 'changes.db'}"
        reader = open_destination(url, organization=sim.organization)
        await reader.open()
        store = Hooked(open_destination(url))
        await store.open()
        try:
            yield sim, clock, reader, store, Daemon(Syncer(api, store, options=options()))
        finally:
            await store.close()
            await reader.close()


#: clock speed while the test waits for a moment: a lookback every 300 s is 6 real s
SLOW = 50.0
#: clock speed once the moment is past, until every event is stored (a lookback in 0.6 s)
FAST = 1_000.0


@pytest.mark.parametrize("shape", ["nested", "flat"])
@pytest.mark.parametrize("moment", ["before", "during", "after"])
@pytest.mark.parametrize(
    ("first", "second"), [("reread", "delayed"), ("audited", "delayed"), ("reread", "audited")]
)
async def test_a_change_of_rung_at_any_moment_of_a_re_read_keeps_every_late_event(
    tmp_path: Any, shape: str, moment: str, first: str, second: str
) -> None:
    async with harness(shape, tmp_path) as (sim, clock, reader, store, daemon):
        try:
            daemon.start(plan_for(first))
            await stored(reader, set(sim.data.event_ids()), daemon.task)
            await until(lambda: _ahead_of(store, sim.clock.now() - 70), "caught up")
            clock.shift(SLOW)
            now = sim.clock.now()
            cursor = await saved(store)
            # dated behind the cursor (read already), inside the lookback, not behind the
            # watermark, and not yet a lookback old: owed to the re-read of their span
            start = max(epoch(cursor.reread) + 1, now - 500)
            stop = epoch(cursor.at) - 1
            assert stop - start > 60
            if moment == "before":  # the re-read of their span has not begun
                late = sim.data.add_events(30, at=start, until=stop)
                await daemon.switch(plan_for(second))
            elif moment == "during":  # the re-read of their span is cut after its first page
                late = sim.data.add_events(PAGE + 10, at=start, until=start + 10)
                ours = set(late)
                store.hook = lambda ids: bool(ours.intersection(ids)) and daemon.cut()
                clock.shift(SPEED)
                await until(lambda: _holds(store, late, some=True), "a page of the re-read")
                await asyncio.gather(daemon.task, return_exceptions=True)  # type: ignore[arg-type]
                store.hook = None
                assert not await _holds(store, late)  # cut between its two pages
                daemon.start(plan_for(second))
            else:  # their span re-read and its watermark saved; the next span still owed
                early = sim.data.add_events(10, at=start, until=start + 10)
                owed = sim.data.add_events(20, at=stop - 50, until=stop)
                late = early + owed

                async def moved() -> bool:
                    mark = (await saved(store)).reread
                    return mark is not None and epoch(mark) > start + 10

                await until(moved, "the watermark past the first span")
                assert await _holds(store, early)
                assert not await _holds(store, owed, some=True)
                await daemon.switch(plan_for(second))
            clock.shift(FAST)  # the moment is past: nothing left to catch
            await stored(reader, set(sim.data.event_ids()), daemon.task)
            once(store, sim)
            assert set(late) <= set(store.events)
        finally:
            await daemon.close()


@pytest.mark.parametrize("shape", ["nested", "flat"])
@pytest.mark.parametrize("back", ["reread", "audited"])
async def test_from_one_read_and_back_the_re_read_owed_is_kept(
    tmp_path: Any, shape: str, back: str
) -> None:
    # one read a lookback late owes no re-read (what it read was a lookback old); the rung
    # that reads at once owes one; back to one read before it is made: still made once
    async with harness(shape, tmp_path) as (sim, clock, reader, store, daemon):
        try:
            daemon.start(plan_for("delayed"))
            await stored(reader, set(sim.data.event_ids()), daemon.task)
            await until(lambda: _ahead_of(store, sim.clock.now() - LOOKBACK - 5), "caught up")
            clock.shift(SLOW)
            now = sim.clock.now()
            ahead = sim.data.add_events(10, at=now - 500, until=now - 300)  # not read yet
            await daemon.switch(plan_for(back))  # reads at once: owes their re-read
            await until(lambda: _holds(store, ahead), "the prompt read")
            await until(lambda: _ahead_of(store, sim.clock.now() - 70), "caught up again")
            now = sim.clock.now()
            owed = sim.data.add_events(20, at=now - 400, until=now - 100)
            await daemon.switch(plan_for("delayed"))
            clock.shift(FAST)  # the moment is past: nothing left to catch
            await stored(reader, set(sim.data.event_ids()), daemon.task)
            once(store, sim)
            assert set(ahead + owed) <= set(store.events)
        finally:
            await daemon.close()


async def _holds(store: Recording, ids: list[str], *, some: bool = False) -> bool:
    held = set(store.events).intersection(ids)
    return bool(held) if some else len(held) == len(ids)


async def _ahead_of(store: Recording, t: float) -> bool:
    return epoch((await saved(store)).at) >= t - 5


@pytest.mark.parametrize("shape", ["nested", "flat"])
async def test_a_fresh_daemon_keeps_the_late_events_of_its_first_re_plan(
    tmp_path: Any, shape: str
) -> None:
    # the run: with nothing observed the plan starts thorough (three reads), after
    # the first pass it moves to one read per event; 40 late events inside the lookback
    # appear just before that re-plan, behind the follower's cursor
    async with geared(shape) as (sim, _clock), sim.client(limits=Limits(month=600)) as api:
        url = f"sqlite:///{tmp_path / 'first.db'}"
        reader = open_destination(url, organization=sim.organization)
        await reader.open()
        store = Recording(open_destination(url))
        caught_up = asyncio.Event()
        injected: list[str] = []
        plans: list[SyncPlan] = []

        def on_plan(plan: SyncPlan) -> None:
            plans.append(plan)
            if len(plans) == 2:  # made after the first pass, before the follower moves
                now = sim.clock.now()
                injected.extend(sim.data.add_events(40, at=now - 500, until=now - 100))

        class FirstPass(Syncer):
            async def _refresh(self) -> int:  # the first pass ends once events caught up
                await caught_up.wait()
                return await super()._refresh()

        syncer = FirstPass(api, store, options=options(), on_plan=on_plan)
        task = asyncio.create_task(syncer.run_forever())
        try:
            await stored(reader, set(sim.data.event_ids()), task)
            await until(lambda: _ahead_of(store, sim.clock.now() - 70), "caught up")
            caught_up.set()
            await until(lambda: is_(len(plans) >= 2 or task.done()), "the re-plan")
            assert [p.late for p in plans[:2]] == ["audited", "delayed"], plans[1].describe()
            await stored(reader, set(sim.data.event_ids()), task)
            once(store, sim)
            assert set(injected) <= set(store.events)
        finally:
            syncer.stop()
            await asyncio.wait_for(task, timeout=30)
            await store.close()
            await reader.close()


async def is_(value: bool) -> bool:
    """``value``, as a condition :func:`until` awaits."""
    return value
