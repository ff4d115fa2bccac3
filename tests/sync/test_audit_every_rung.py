"""The audit stays on every rung of the object plan, and the lookback follows the lateness
it finds (issue 39): on the one-read rung (each event read once, a lookback late) an
event later than the lookback is found by an audit that reads only where nothing was
delivered, stored, counted, and said once with the ``--lookback`` that stores such events
on time; the plan's lookback grows to it (it costs no object: only delay), and the next
events as late are stored by the lookback. The gap audit's objects are what it finds:
nothing, when nothing is late. On the flat and nested record shapes.

Counts and order, not times: the clock is scaled, and what is asserted does not depend on
how fast this machine keeps up with it."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from asyncwifi import Limits
from asyncwifi.engine import EventFeed, open_destination
from asyncwifi.engine._lookback import AUDIT_RANGES, Audit, lookback_setting
from asyncwifi.engine._rereads import Delivered
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.sync._plan import SyncPlan
from asyncwifi.testing._data import DEFAULT_EVENTS_END
from tests.sync.conftest import Recording
from tests.sync.test_late_events import SINCE, once, platform, stored
from tests.sync.test_plan_changes import is_, until

TOLD = "events appeared more than the lookback"


def late_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and TOLD in r.getMessage()
    ]


@pytest.mark.parametrize("shape", ["nested", "flat"])
async def test_on_one_read_an_event_later_than_the_lookback_is_found_told_once_and_followed(
    tmp_path: Any, caplog: pytest.LogCaptureFixture, shape: str
) -> None:
    caplog.set_level(logging.INFO, logger="asyncwifi.sync")
    # 300 events, 20 contacts, an allowance that buys one read per event (the issue's
    # delayed rung), a poll every second
    async with platform(shape, events=300) as sim, sim.client(limits=Limits(month=600)) as api:
        url = f"sqlite:///{tmp_path / 'audit.db'}"
        reader = open_destination(url, organization=sim.organization)
        await reader.open()
        store = Recording(open_destination(url))
        plans: list[SyncPlan] = []
        options = SyncOptions(since=SINCE, poll_interval=1.0, refresh_every=1e9)
        syncer = Syncer(api, store, options=options, on_plan=plans.append)
        task = asyncio.create_task(syncer.run_forever())
        try:
            await stored(reader, set(sim.data.event_ids()), task)
            await until(lambda: is_(bool(plans) and plans[-1].late == "delayed"), "one read")
            assert plans[-1].lookback == 600.0
            # the one-read feed audits from where it started: 15 minutes on
            await sim.clock.sleep(1_000)
            # 15 minutes late: behind what the one read reached (10 minutes late)
            now = sim.clock.now()
            beyond = sim.data.add_events(3, at=now - 910, until=now - 900)
            await stored(reader, set(sim.data.event_ids()), task)
            assert syncer.stats.late_events["audit"] == 3
            (told,) = late_warnings(caplog)
            assert told.startswith("sync: 3 events appeared more than the lookback (600 s)")
            # the plan follows: one read, a longer lookback later (no object more)
            await until(lambda: is_(plans[-1].lookback > 600.0), "the lookback followed")
            plan = plans[-1]
            setting, flag = lookback_setting(plan.lookback)
            assert f"(--lookback {flag})" in told
            assert plan.late == "delayed"
            assert plan.lookback == plan.settle == setting >= 900.0
            assert "the audit found events up to" in plan.describe()[1]
            # as late again: now inside the lookback, stored by it, said no more
            now = sim.clock.now()
            again = sim.data.add_events(3, at=now - 910, until=now - 900)
            await stored(reader, set(sim.data.event_ids()), task)
            assert late_warnings(caplog) == [told]
            assert syncer.stats.late_events["audit"] == 3
            once(store, sim)
            assert set(beyond + again) <= set(store.events)
        finally:
            syncer.stop()
            await asyncio.wait_for(task, timeout=30)
            await store.close()
            await reader.close()


async def delivered_all_served(served: Any, feed: EventFeed, within: float = 10.0) -> None:
    """Every event the simulator served was delivered by ``feed``: once the page the feed
    may have in flight (served, not yet handed out) arrived. A read that wastes objects
    never gets there: the assertion fails after ``within`` real seconds. An event dated
    exactly at a forward span's end is served again by the next span, which starts there
    (``feed.replayed``, skipped): a few at most, and not the audit's (a CI run met one)."""
    deadline = time.monotonic() + within

    def delivered() -> int:
        return feed.measured[0] + feed.replayed

    while served["events"] != delivered() and time.monotonic() < deadline:
        await asyncio.sleep(0.002)
    assert served["events"] == delivered()
    assert feed.replayed <= 3, feed.replayed


async def follow(feed: EventFeed, while_: Callable[[], Awaitable[None]]) -> None:
    async def consume() -> None:
        async for _batch in feed:
            pass

    task = asyncio.create_task(consume())
    try:
        await while_()
        if task.done():
            task.result()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.parametrize("shape", ["nested", "flat"])
async def test_the_gap_audit_costs_only_what_it_finds(shape: str) -> None:
    # one read a lookback (5 min) late, three events every 30 s on time: the audits read
    # the stretches between them and return nothing; an event 7 minutes late, dated in a
    # quiet half-minute, is found there
    async with platform(shape, events=200) as sim, sim.client() as api:
        lookback = 300.0
        feed = EventFeed(
            api, since=SINCE, follow=True, poll_interval=5.0, settle=lookback,
            lookback=lookback, audit="gaps",
        )  # fmt: skip
        served = sim.counters.objects_served
        late: list[str] = []

        async def run() -> None:
            while feed.cursor.at < datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC):
                await asyncio.sleep(0.01)  # catching up
            start, quiet = sim.clock.now(), 0.0
            while sim.clock.now() - start < 1_500 or not late:
                now = sim.clock.now()
                if not quiet and now - start >= 300:
                    quiet = now - 15  # nothing added this time: a quiet half-minute
                else:
                    sim.data.add_events(3, at=now - 30, until=now - 1)
                if quiet and not late and now >= quiet + 420:
                    # read (a lookback late, 300 s) and not yet audited (its slice, up to
                    # 300 s long, is audited once two lookbacks old: 600 s at the earliest);
                    # every record served was delivered: the audits returned nothing
                    await delivered_all_served(served, feed)
                    late.extend(sim.data.add_events(1, at=quiet))
                await sim.clock.sleep(30)
            while feed.rereads.late["audit"] < 1 and sim.clock.now() - start < 3_600:
                await sim.clock.sleep(10)
            await delivered_all_served(served, feed)

        await follow(feed, run)
        assert feed.rereads.reads["audit"] >= 3
        assert 0 < feed.rereads.requests <= AUDIT_RANGES * feed.rereads.reads["audit"]
        assert feed.rereads.late == {"lookback": 0, "audit": 1}
        # every record served was delivered once: the audits returned only the late one
        # (checked above, before the feed was stopped: a page in flight then is served and
        # not yet delivered, as it was beside a CPU-bound neighbour: 312 and 303)


def test_the_stretches_a_gap_audit_reads_are_the_longest_where_nothing_was_delivered() -> None:
    base = datetime(2026, 11, 1, tzinfo=UTC)

    def t(s: float) -> datetime:
        return base + timedelta(seconds=s)

    ms = timedelta(milliseconds=1)
    seen = Delivered()
    # records at 10 s, 11 s and 40 s; a span of records with no time from 60 s to 70 s
    seen.add(["a", "b", "c"], [t(10), t(11), t(40)], [(t(s), t(s)) for s in (10, 11, 40)])
    seen.add(["d"], [t(70)], [(t(60), t(70))])
    gaps = [(t(0), t(10) - ms), (t(10) + ms, t(11) - ms), (t(11) + ms, t(40) - ms),
            (t(40) + ms, t(60) - ms), (t(70) + ms, t(100))]  # fmt: skip
    assert seen.free(t(0), t(100), 10) == gaps
    # at most ``most`` requests: the longest, in time order
    assert seen.free(t(0), t(100), 2) == [gaps[2], gaps[4]]
    seen.forget(t(50))
    assert seen.free(t(0), t(100), 10) == [(t(0), t(60) - ms), (t(70) + ms, t(100))]


@pytest.mark.parametrize(
    ("late_by", "setting"),
    [(1, (300.0, "5m")), (901, (1_200.0, "20m")), (3_600, (3_600.0, "1h")),
     (5_430, (6_300.0, "1h45m")), (21_601, (25_200.0, "7h")), (10**6, (86_400.0, "24h"))],
)  # fmt: skip
def test_the_lookback_said_is_the_one_that_stores_what_was_found(
    late_by: float, setting: tuple[float, str]
) -> None:
    assert lookback_setting(late_by) == setting


@pytest.mark.parametrize("shape", ["nested", "flat"])
@pytest.mark.parametrize("audit", ["full", "gaps"])
async def test_an_audit_from_a_checkpoint_does_not_take_what_it_carried_for_late(
    shape: str, audit: Audit
) -> None:
    # a feed (a new rung's, or a restart's) starts at a checkpoint whose cursor carries
    # the events delivered at its own time: the audit of that time must not deliver them
    # again (the benchmark's churn organization wrote three events twice this way)
    async with platform(shape, events=100) as sim, sim.client() as api:
        at = float(int(sim.clock.now()) - 30)  # a whole second: the cursor stops there
        carried = sim.data.add_events(3, at=at)  # three events at that second
        first = EventFeed(api, since=SINCE, until=datetime.fromtimestamp(at, UTC), settle=None)
        checkpoint = None
        async for batch in first:
            checkpoint = batch.checkpoint or checkpoint
        assert checkpoint is not None
        feed = EventFeed(
            api, checkpoint=checkpoint, follow=True, poll_interval=1.0, settle=10.0,
            lookback=60.0, audit=audit,
        )  # fmt: skip
        delivered: list[str] = []

        async def consume() -> None:
            async for batch in feed:
                delivered.extend(str(e.id) for e in batch.items)

        task = asyncio.create_task(consume())
        try:
            start = sim.clock.now()
            while feed.rereads.reads["audit"] < 2 and sim.clock.now() - start < 900:
                await sim.clock.sleep(5)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        assert feed.rereads.reads["audit"] >= 2
        assert not set(carried) & set(delivered)
        assert feed.rereads.late == {"lookback": 0, "audit": 0}
