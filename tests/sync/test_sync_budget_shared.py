"""A sync budget is a share of the key's day counted by the limiter alone (its admissions
per tag), shared through Redis: a sync at half the day leaves the other half to a second
process on the same key, and goes on once its own requests age out of the day.

The clock runs slowly while the two processes share the day, so that what the test looks at
cannot age out while a loaded machine keeps it from looking, and fast once the sync waits
for the day to pass."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from asyncwifi import Limit, Limits, RedisStore
from asyncwifi.engine import Budget, open_destination
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.testing import Simulator
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests.ratelimit.rlhelpers import require_redis
from tests.sync.conftest import GearedClock

REDIS = "redis://127.0.0.1:6379/0"
MIDNIGHT = 1_767_225_600.0  # 2026-01-01T00:00:00Z
DAY = 86_400.0
#: the key's day: 20 requests; the sync's budget is half of it, all for events
LIMITS = Limits(minute=None, day=Limit(20, DAY))
ONLY_EVENTS = {"events": 1.0}


class WatchedBudget(Budget):
    """A budget that says when the sync first waits on it (what the test waits for, instead
    of a count that a moment of CPU starvation could let it miss)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.waiting = asyncio.Event()

    async def wait(self, resource: str, need: int = 1) -> bool:
        if not await self.has(resource, need):
            self.waiting.set()
        return await super().wait(resource, need)


def where(task: asyncio.Future[Any]) -> str:
    """Where each task of the loop waits: its chain of awaits, innermost last (a stall)."""
    lines = []
    for t in asyncio.all_tasks():
        lines.append(f"-- {t.get_name()}{' (the sync)' if t is task else ''}")
        coro: Any = t.get_coro()
        while coro is not None and hasattr(coro, "cr_frame"):
            frame = coro.cr_frame
            if frame is not None:
                lines.append(
                    f"   {frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}"
                )
            coro = coro.cr_await
        if coro is not None:
            lines.append(f"   awaits {coro!r}"[:300])
    return "\n".join(lines)


async def test_a_sync_at_half_the_day_leaves_the_other_half_to_a_second_process(
    tmp_path: Path,
) -> None:
    require_redis()
    # a day in 432 s while the two processes share it; then in about 4.3 s
    clock = GearedClock(200.0, start=MIDNIGHT + 3_600)
    key, prefix = f"budget-{uuid.uuid4().hex}", f"test:{uuid.uuid4().hex}:"
    options = SyncOptions(
        since=datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC),
        until=datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC),
        page_size=250,  # 3,000 events: 12 pages and more, past the sync's 10 requests
    )

    def store() -> RedisStore:  # each "process" its own connection to the key's one log
        # a loaded machine must not look like a Redis outage (the fallback counts locally
        # until the next admission writes it): this test is about one count, not outages
        return RedisStore(REDIS, key=key, prefix=prefix, use_redis_time=False, op_timeout=30.0)

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
            budget = WatchedBudget(a.scheduler, 0.5, shares=ONLY_EVENTS, recheck=600.0)
            assert budget.total == 10
            syncer = Syncer(a, destination, options=options, budget=budget)
            sync = asyncio.ensure_future(syncer.sync_events())
            # the sync spends its half of the day on events, then waits for it to age out
            # (a span starts with two requests in hand: it may stop one short of its ten)
            try:
                await asyncio.wait_for(budget.waiting.wait(), 60.0)
            except TimeoutError:  # seen once in CI: say where the sync was, for its cause
                raise AssertionError(
                    f"the sync never waited on its budget: {len(admitted)} event requests "
                    f"admitted, store degraded: {a.scheduler.store.degraded!r}, clock at "
                    f"{clock.now() - MIDNIGHT:.0f} s of the day; where the sync was:\n"
                    + where(sync)
                ) from None
            # one count, read by both: read between two equal readings of the sync's own (a
            # request of its span may still be admitted while the test reads)
            while True:
                spent = await a.scheduler.used("events")
                seen = await b.scheduler.used("events")
                if await a.scheduler.used("events") == spent:
                    break
            assert 9 <= spent <= 10
            assert seen == spent
            # the second process has the rest of the day, at once (logins count too)
            left = LIMITS.day.count - sum((await b.scheduler.used()).values())  # type: ignore[union-attr]
            assert left >= 8  # the sync left (almost) half: its login and a prefetch aside

            async def spend_the_rest() -> None:
                for _ in range(left - 1):  # its own login takes one
                    assert sum((await b.scheduler.used()).values()) < LIMITS.day.count  # type: ignore[union-attr]
                    await b.segments.list()

            # a second process that waited for the day would wait 432 s
            try:
                await asyncio.wait_for(spend_the_rest(), 30.0)
            except TimeoutError:
                raise AssertionError("the second process waited for the day") from None
            assert not sync.done()
            clock.shift(20_000.0)
            await sync  # a day later the sync's requests aged out: it finishes
            # its 11th request went only when its first had left the day (the limiter's own
            # clock times: nothing here depends on how fast this machine is)
            assert len(admitted) > 10
            assert admitted[10] - admitted[0] >= DAY
            assert await destination.count("events") == 3_000
            assert await a.scheduler.used("events") <= 10 + 4  # within the share, again
        await destination.close()
