"""A scroll's next request always has a place in time: the keep-alive rule (``_keepalive``).

The soak test's failure, reduced: a burst of ordinary requests fills the minute window
while a scroll is open; the window frees only ``span`` (61 s) after its oldest admission,
so a continuation due 57 s after a page sent in the burst's first seconds could not be
admitted in time however the waiters were ordered, and across processes sharing a key,
another process's ordinary request took the place the continuation waited for. Each test
runs a scroll beside a flood of ordinary requests and checks every continuation is
admitted by its due time, the windows hold, and the flood still uses the window.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from asyncwifi._clock import ScaledClock
from asyncwifi.ratelimit import Lane, Limit, Limits, MemoryStore, RedisStore, Scheduler
from asyncwifi.ratelimit._keepalive import KeepAlive, place, shortfall
from asyncwifi.ratelimit._limits import WindowSpec
from asyncwifi.ratelimit._log import Log
from tests._virtualclock import VirtualClock
from tests.ratelimit.rlhelpers import START, max_in_sliding

HORIZON = 57.0  # the producer's: a 60 s scroll window less 5 % for the road
PAGES = 6


async def scroll(
    s: Scheduler,
    pages: int,
    sent: list[float],
    *,
    keep: bool,
    gap: float = 0.1,
    read: asyncio.Event | None = None,
) -> list[float]:
    """A scroll as the producer runs it with a fast consumer: each continuation is asked
    for as soon as the previous page arrives (``gap`` later; after the first page, once
    ``read`` is set if given), due ``HORIZON`` after it. Returns how late each
    continuation was past its due time (0 when on time)."""
    clock = s.clock
    ka = s.keepalive(HORIZON) if keep else None
    late: list[float] = []
    previous: float | None = None
    try:
        for _ in range(pages):
            deadline = None if previous is None else previous + HORIZON
            async with s.slot(Lane.SCROLL, deadline=deadline, keepalive=ka) as p:
                sent.append(p.sent_at)
                if deadline is not None:
                    late.append(max(0.0, p.sent_at - deadline))
                previous = p.sent_at
            await clock.sleep(gap)
            if read is not None:
                await read.wait()
    finally:
        if ka is not None:
            s.drop_keepalive(ka)
    return late


async def flood(s: Scheduler, n: int, sent: list[float]) -> None:
    """``n`` ordinary requests, all waiting from the start (interactive loops, exports)."""

    async def one() -> None:
        async with s.slot(Lane.DEFAULT) as p:
            sent.append(p.sent_at)

    await asyncio.gather(*(one() for _ in range(n)))


def burst_then_scroll(keep: bool) -> tuple[list[float], list[float], list[float]]:
    clock = VirtualClock(START)
    ordinary: list[float] = []
    scrolled: list[float] = []

    async def main() -> list[float]:
        async with Scheduler(Limits(max_in_flight=None), clock=clock) as s:
            late = asyncio.create_task(scroll(s, PAGES, scrolled, keep=keep))
            await asyncio.sleep(0)  # the scroll's first page goes first, then the flood
            await flood(s, 300, ordinary)
            return await late

    late = clock.run(main())
    return late, ordinary, scrolled


def test_without_the_rule_a_burst_leaves_the_continuation_no_place_in_time() -> None:
    """The control: the scenario is real (earliest deadline first alone is late)."""
    late, _, _ = burst_then_scroll(keep=False)
    assert max(late) > 3.0  # 61 s after the burst, not 57 s after the page: lapsed


def test_every_continuation_is_admitted_by_its_due_time_beside_a_burst() -> None:
    late, ordinary, scrolled = burst_then_scroll(keep=True)
    assert late == [0.0] * (PAGES - 1)
    everything = ordinary + scrolled
    assert max_in_sliding(everything, 61.0) == 60  # the window still holds, and is used
    # the flood loses at most one place per scroll window to the kept place
    assert len(ordinary) == 300
    # the first page and 58 ordinary requests at once; the 60th place was kept for the
    # continuation, which went when its own next would have a place in time
    first = sorted(ordinary)
    assert first[57] == START
    assert first[58] == START + 61.0
    assert scrolled[:2] == [START, START + 61.0 - HORIZON]


def test_a_new_scroll_waits_until_it_can_be_kept_alive() -> None:
    """A scroll whose first page would leave its next no place before the window frees
    starts a little later instead (DESIGN "Rate limits" 5)."""
    clock = VirtualClock(START)
    scrolled: list[float] = []

    async def main() -> list[float]:
        async with Scheduler(Limits(max_in_flight=None), clock=clock) as s:
            await flood(s, 59, [])  # 59 of the 60 places, all at START
            return await scroll(s, 3, scrolled, keep=True)

    late = clock.run(main())
    assert late == [0.0, 0.0]
    assert scrolled[0] == START + 61.0 - HORIZON  # its next then has the burst's places


def test_a_scroll_that_ended_gives_its_place_back() -> None:
    clock = VirtualClock(START)

    async def main() -> float:
        async with Scheduler(Limits(max_in_flight=None), clock=clock) as s:
            await scroll(s, 1, [], keep=True)
            sent: list[float] = []
            await flood(s, 59, sent)  # the scroll ended: all 59 places go now
            return max(sent)

    assert clock.run(main()) == START + 0.1


def test_the_rule_counts_places_in_every_short_window_earliest_due_first() -> None:
    """``shortfall``: two scrolls due at 10 and 20 in a window of 3 per 30 s (span 30)."""
    log = Log([WindowSpec("minute", 3, 30.0, 0.0)])
    for t in (0.0, 1.0):
        log.record(t, "x")
    w = log.specs
    # one place free now, the next frees at 30: the scroll due at 10 gets the free one
    assert shortfall(log, w, 5.0, [10.0, 20.0], 0) == 1
    assert place(log, w, 5.0, 1) == (5.0, True)
    assert place(log, w, 5.0, 2) == (30.0, True)
    # an ordinary admission now takes the free place: the scroll due at 10 loses it
    assert shortfall(log, w, 5.0, [10.0], 1) == 1
    # the 4th from now comes behind one at now itself, a span later: waiting is vain
    assert place(log, w, 5.0, 4) == (35.0, False)


def test_the_day_is_not_kept_for_scrolls() -> None:
    """Only the short windows are checked: the day's last places stay spendable."""
    store = MemoryStore()
    store.bind([WindowSpec("minute", 60, 61.0, 0.0), WindowSpec("day", 2, 86_400.0, 0.0)])
    assert store.take(0.0, "x", KeepAlive("s", HORIZON)) == (0.0, 0.0, "")
    assert store.due == {"s": HORIZON}
    assert store.take(1.0, "x") == (1.0, 1.0, "")  # the day's last place, for anyone


# -- across processes: one key in Redis, one process scrolling, another flooding ---------


@pytest.mark.redis
@pytest.mark.parametrize("keep", [False, True], ids=["control", "kept"])
async def test_another_process_cannot_take_the_place_a_continuation_needs(
    prefix: str, keep: bool
) -> None:
    """Two schedulers on one Redis key (two processes): A sends a scroll's page, B floods
    while A reads it, then A asks for the next page. Scaled time (a minute is 0.6 s);
    assertions on the clock's time line."""
    clock = ScaledClock(100.0)
    lim = Limits(minute=Limit(20, 60.0), day=Limit(10_000, 86_400.0))

    def store() -> RedisStore:
        return RedisStore("redis://127.0.0.1:6379", key="acct", prefix=prefix, use_redis_time=False)

    a = Scheduler(replace(lim, max_in_flight=None), clock=clock, store=store())
    b = Scheduler(replace(lim, max_in_flight=None), clock=clock, store=store())
    ordinary: list[float] = []
    scrolled: list[float] = []
    filled = asyncio.Event()
    try:
        late_task = asyncio.create_task(scroll(a, 4, scrolled, keep=keep, read=filled))
        while not scrolled:  # the first page is out
            await asyncio.sleep(0.001)
        flooding = asyncio.create_task(flood(b, 60, ordinary))
        # A reads its page while B's flood takes every place it may: 19 without the rule,
        # 18 with it (one is kept for A); counted, not timed, so a loaded machine is no
        # different
        while len(ordinary) < (19 if not keep else 18):
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.01)
        filled.set()
        await flooding
        late = await late_task
    finally:
        await a.aclose()
        await b.aclose()
    assert max_in_sliding(ordinary + scrolled, 61.0) <= 20
    if not keep:
        # B's ordinary requests took every place until the burst's oldest left the
        # window, 61 s after it: the continuation came 4 s past its due time, and lapsed
        assert max(late) > 3.0, late
    else:
        # none is late (a few clock tenths at most: scaled-time scheduling noise, far
        # inside the 3 s the due time keeps for the road)
        assert max(late) < 2.0, late
