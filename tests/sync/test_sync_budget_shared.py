"""A sync budget is a share of the key's day counted by the limiter alone (its admissions
per tag), shared through Redis: a sync at half the day leaves the other half to a second
process on the same key, and goes on once its own requests age out of the day."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path

from asyncwifi import Limit, Limits, RedisStore, ScaledClock
from asyncwifi.sync import Budget, Syncer, SyncOptions, open_destination
from asyncwifi.testing import Simulator
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests.ratelimit.rlhelpers import require_redis

REDIS = "redis://127.0.0.1:6379/0"
MIDNIGHT = 1_767_225_600.0  # 2026-01-01T00:00:00Z
DAY = 86_400.0
#: the key's day: 20 requests; the sync's budget is half of it, all for events
LIMITS = Limits(minute=None, day=Limit(20, DAY))
ONLY_EVENTS = {"events": 1.0}


async def test_a_sync_at_half_the_day_leaves_the_other_half_to_a_second_process(
    tmp_path: Path,
) -> None:
    require_redis()
    clock = ScaledClock(20_000.0, start=MIDNIGHT + 3_600)  # a day in about 4.3 s
    key, prefix = f"budget-{uuid.uuid4().hex}", f"test:{uuid.uuid4().hex}:"
    options = SyncOptions(
        since=datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC),
        until=datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC),
        page_size=250,  # 3,000 events: 12 pages and more, past the sync's 10 requests
    )

    def store() -> RedisStore:  # each "process" its own connection to the key's one log
        return RedisStore(REDIS, key=key, prefix=prefix, use_redis_time=False)

    async with Simulator(clock=clock, events=3_000, contacts=20, rate_limit_mode="off",
                         scroll_ttl=1e9) as sim:  # fmt: skip
        destination = open_destination(f"sqlite:///{tmp_path / 'a.db'}")
        await destination.open()
        async with (
            sim.client(limits=LIMITS, rate_store=store(), scroll_window=1e9) as a,
            sim.client(limits=LIMITS, rate_store=store()) as b,
        ):
            admitted: list[float] = []  # when each of the sync's event requests was admitted
            a.add_hook("request", lambda info: "/events" in info.path
                       and admitted.append(info.admitted_at))  # fmt: skip
            budget = Budget(a.scheduler, 0.5, shares=ONLY_EVENTS, recheck=600.0)
            assert budget.total == 10
            syncer = Syncer(a, destination, options=options, budget=budget)
            sync = asyncio.ensure_future(syncer.sync_events())
            # the sync spends its half of the day on events, then waits for it to age out
            while await a.scheduler.used("events") < 10 or await budget.remaining("events"):
                await asyncio.sleep(0.005)
            assert await b.scheduler.used("events") == 10  # one count, read by both
            # the second process has the rest of the day, at once (logins count too)
            left = LIMITS.day.count - sum((await b.scheduler.used()).values())  # type: ignore[union-attr]
            assert left >= 8  # the sync left (almost) half: its login and a prefetch aside
            sent = clock.now()
            for _ in range(left - 1):  # its own login takes one
                assert sum((await b.scheduler.used()).values()) < LIMITS.day.count  # type: ignore[union-attr]
                await b.segments.list()
            # not a day's wait (that would be ~86,400 clock seconds; the clock runs 20,000x)
            assert clock.now() - sent < DAY / 4, "the second process waited for the day"
            assert not sync.done()
            await sync  # a day later the sync's requests aged out: it finishes
            # its 11th request went only when its first had left the day (the limiter's own
            # clock times: nothing here depends on how fast this machine is)
            assert len(admitted) > 10
            assert admitted[10] - admitted[0] >= DAY
            assert await destination.count("events") == 3_000
            assert await a.scheduler.used("events") <= 10 + 4  # within the share, again
        await destination.close()
