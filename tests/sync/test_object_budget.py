"""A sync daemon under an object budget (spec §8: objects are a quota too), over a scaled
month against the simulator: it plans from its share of the allowance, stays inside it,
and stores every event exactly once, the late ones within the lookback included; what it
counted is what the server counted. Counts and order, not times: the clock is scaled, and
what is asserted does not depend on how fast this machine keeps up with it."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from asyncwifi import Limits
from asyncwifi.engine import open_destination
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.sync._plan import SyncPlan
from asyncwifi.testing import Simulator
from tests.sync.conftest import GearedClock, Recording

DAY = 86_400.0
MONTH = datetime(2026, 11, 1, tzinfo=UTC).timestamp()  # 30 days
#: the month in about 20 real seconds
SPEED = 130_000.0
#: real seconds a wait may take before the test fails
DEADLINE = 120.0


async def until(condition: object, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def test_a_daemon_stays_inside_its_share_for_a_month_storing_every_event_once(
    tmp_path: Path,
) -> None:
    # slow until the plan has measured the first pass (at full speed a starved first pass
    # lasted a clock day, read by the first plan's re-reads), then a month in ~20 s
    clock = GearedClock(SPEED / 50, start=MONTH + 60)
    async with Simulator(
        clock=clock,
        contacts=2_000,
        hotspots=10,
        segments=6,
        events=2_100,  # the week before: a first run's read (7 days, 300 a day)
        events_start=MONTH - 7 * DAY,
        events_end=MONTH,
    ) as sim:
        # 300 events a day, a tenth of them up to 8 minutes late; 20 contacts changed a day
        feed = sim.start_feed(300 / DAY, tick=600.0, late_share=0.1, late_by=480.0,
                              contact_changes=20 / DAY)  # fmt: skip
        plans: list[SyncPlan] = []
        #: the clock time of each plan (the first re-plan moves the follower to one read)
        planned: list[float] = []

        def on_plan(plan: SyncPlan) -> None:
            plans.append(plan)
            planned.append(clock.now())

        async with sim.client(limits=Limits(month="10 access points")) as api:
            store = Recording(open_destination(f"sqlite:///{tmp_path / 'month.db'}"))
            since = datetime.fromtimestamp(MONTH - 7 * DAY, UTC)  # the clock runs fast
            options = SyncOptions(since=since, poll_interval=1_800.0)
            syncer = Syncer(api, store, options=options, on_plan=on_plan)
            task = asyncio.create_task(syncer.run_forever())
            try:
                await until(lambda: len(plans) >= 2 or task.done(), "the plan remade")
                clock.shift(SPEED)
                await until(lambda: clock.now() > MONTH + 29 * DAY or task.done(), "the month")
                await sim.stop_feed()
                stop = clock.now()
                # the last events are read a lookback after their time, at a poll
                await until(lambda: clock.now() > stop + 3_600 or task.done(), "the last poll")
                await until(
                    lambda: set(store.events) >= set(sim.data.event_ids()) or task.done(),
                    "every event stored",
                )
                syncer.stop()
                await asyncio.wait_for(task, timeout=30)
                spent = await api.scheduler.objects()
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                await store.close()
        assert clock.now() < MONTH + 30 * DAY  # still the same month
        # every event once: the week before, the month's, the late ones
        twice = [i for i, n in Counter(store.events).items() if n > 1]
        assert not twice, f"{len(twice)} events written twice"
        assert set(store.events) == set(sim.data.event_ids())
        assert feed.late >= 800  # late events were among them
        # the plan: made before the first read, and again once it had measured
        assert len(plans) >= 2
        plan = syncer.plan
        assert plan is not None
        assert plan.share == 18_000  # 0.9 of 10 access points x 2,000
        assert plan.projection <= plan.share
        assert plan.late == "delayed"  # 2x does not fit: each event once, 10 min late
        # inside the share, and what the client counted is what the server served
        served = sim.counters.objects_served
        assert spent.keys() == served.keys()
        for kind, count in served.items():
            # a read the stop cut short after the server answered it is served, uncounted:
            # at most one page (a whole hotspot or segment list, here)
            assert 0 <= count - spent[kind] <= {"hotspots": 10, "segments": 6}.get(kind, 0)
        assert sum(spent.values()) <= plan.share
        # events: the first run's week, then each new event read once; but the re-read the
        # first plan owed when it moved to one read (issue 39: a change of plan never drops
        # a read it owes): the events its re-reads had not reached, read again once. Its
        # watermark trails the cursor by a lookback from the last poll, and the cursor the
        # re-plan by the settle: at most a poll + lookback + settle before the re-plan
        first = plans[0]
        owed_since = planned[1] - first.poll - first.lookback - first.settle
        owed = sim.data.event_ids(owed_since, planned[1])
        assert len(sim.data.event_ids()) <= served["events"]
        assert served["events"] <= len(sim.data.event_ids()) + len(owed)
        # contacts: the first read of all, then changes only (no second full read)
        assert served["contacts"] <= 2_000 + 30 * 20 * 1.5
        assert served["segments"] <= 6 * 31  # daily
        assert served["hotspots"] <= 10 * 6  # a first read, weekly reconciles
