"""Property tests in virtual time: random arrivals, cancellations and server feedback.

Every example runs a fresh scheduler on a :class:`VirtualClock` against a fake gateway that
counts requests at *arrival* (after a network latency below the margin), in fixed UTC
windows or in a sliding window, and checks what DESIGN "Rate limits" promises.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asyncwifi.ratelimit import Lane, Limit, Limits, MemoryStore, Scheduler
from tests._virtualclock import VirtualClock
from tests.ratelimit.rlhelpers import START, FakeGateway, max_in_fixed, max_in_sliding

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Req:
    gap: float  # seconds after the previous arrival
    lane: Lane
    deadline: float | None  # seconds after arrival
    hold: float  # seconds between the response and the end of the slot
    latency: float  # fraction of the margin the request spends on the way
    cancel_after: float | None  # seconds after arrival
    fake_429: float | None  # the gateway answers 429 with this Retry-After instead
    others: int  # requests other clients made on the key (lowers the remaining count)


reqs = st.builds(
    Req,
    gap=st.one_of(st.just(0.0), st.floats(0.0, 3.0)),
    lane=st.sampled_from(list(Lane)),
    deadline=st.one_of(st.none(), st.floats(0.0, 10.0)),
    hold=st.floats(0.0, 2.0),
    latency=st.floats(0.0, 0.95),
    cancel_after=st.one_of(st.none(), st.none(), st.floats(0.0, 5.0)),
    fake_429=st.one_of(*[st.none()] * 6, st.floats(0.5, 30.0)),
    others=st.one_of(st.just(0), st.just(0), st.integers(0, 3)),
)


@SETTINGS
@given(
    n=st.integers(1, 8),
    period=st.sampled_from([1.0, 6.0, 60.0]),
    margin=st.sampled_from([0.5, 1.0, 3.0]),
    sliding=st.booleans(),
    max_in_flight=st.one_of(st.none(), st.integers(1, 4)),
    workload=st.lists(reqs, min_size=1, max_size=40),
)
def test_random_workload_keeps_every_promise(
    n: int,
    period: float,
    margin: float,
    sliding: bool,
    max_in_flight: int | None,
    workload: list[Req],
) -> None:
    clock = VirtualClock(START)
    lim = Limits(minute=Limit(n, period), day=Limit(100_000, 1e7), minute_margin=margin)
    span = lim.windows()[0].span
    m_eff = span - period
    gateway = FakeGateway(n, period, sliding=sliding)
    store = MemoryStore()
    entered: list[int] = []
    admitted: list[tuple[int, float]] = []
    pauses: list[tuple[float, float]] = []
    refused = 0

    async def one(i: int, r: Req, sched: Scheduler) -> None:
        nonlocal refused
        deadline = None if r.deadline is None else clock.now() + r.deadline
        entered.append(i)
        async with sched.slot(r.lane, deadline=deadline) as p:
            admitted.append((i, p.sent_at))
            await clock.sleep(r.latency * m_eff)  # jitter below the margin
            status, headers = gateway.arrive(clock.now())
            refused += status == 429
            if r.fake_429 is not None:
                status, headers = 429, {"Retry-After": f"{r.fake_429}"}
                pauses.append((clock.now(), clock.now() + r.fake_429))
            elif status == 200 and r.others:
                rem = int(headers["X-RateLimit-Remaining-Minute"]) - r.others
                headers["X-RateLimit-Remaining-Minute"] = str(rem)
            p.observe(status, headers)
            await clock.sleep(r.hold)

    async def canceller(task: asyncio.Task[None], after: float) -> None:
        await clock.sleep(after)
        task.cancel()

    async def main() -> None:
        sched = Scheduler(replace(lim, max_in_flight=max_in_flight), clock=clock, store=store)
        tasks: list[asyncio.Task[None]] = []
        for i, r in enumerate(workload):
            await clock.sleep(r.gap)
            t = asyncio.create_task(one(i, r, sched))
            tasks.append(t)
            if r.cancel_after is not None:
                tasks.append(asyncio.create_task(canceller(t, r.cancel_after)))
        await asyncio.gather(*tasks, return_exceptions=True)
        # cancellation never leaks: nothing in flight, and the log holds exactly the sent ones
        assert sched.in_flight == 0
        assert sched.quota.windows["day"].used == len(admitted)
        await sched.aclose()

    clock.run(main())

    sent = [t for _, t in admitted]
    # never more than N in any window, under both server models
    assert max_in_sliding(sent, period) <= n
    assert max_in_sliding(sent, span) <= n
    assert max_in_fixed(sent, period) <= n
    assert refused == 0, "the gateway refused a request"
    # a 429 pauses everyone: nothing admitted between the 429 and the reset it named
    for start, end in pauses:
        assert not [t for t in sent if start < t < end]
    # FIFO within a lane (requests without a deadline)
    order = {i: k for k, (i, _) in enumerate(admitted)}
    for lane in Lane:
        same = [
            i
            for i in entered
            if i in order and workload[i].lane == lane and workload[i].deadline is None
        ]
        assert sorted(same, key=order.__getitem__) == same


@SETTINGS
@given(
    n=st.integers(1, 10),
    period=st.sampled_from([0.6, 1.0, 60.0]),
    margin=st.sampled_from([0.0, 1.0, 5.0]),
    windows=st.integers(2, 12),
    spread=st.one_of(st.just(0.0), st.floats(0.0, 1.0)),
    paced=st.booleans(),
    extra=st.integers(0, 9),
)
def test_saturated_run_uses_at_least_99_percent_of_the_rate(
    n: int, period: float, margin: float, windows: int, spread: float, paced: bool, extra: int
) -> None:
    """With a backlog, every admission comes the moment the limits allow it (no idling)."""
    clock = VirtualClock(START)
    lim = Limits(minute=Limit(n, period), day=None, minute_margin=margin)
    span = lim.windows()[0].span
    k = n * windows + extra
    arrivals = [START + spread * span * i / k for i in range(k)]
    sent: list[float] = []

    async def one(sched: Scheduler, at: float) -> None:
        await clock.sleep(at - START)
        async with sched.slot() as p:
            sent.append(p.sent_at)

    async def main() -> None:
        store = MemoryStore()
        sched = Scheduler(replace(lim, max_in_flight=None), clock=clock, store=store)
        store.configure("minute", paced=paced)
        await asyncio.gather(*(one(sched, at) for at in arrivals))
        await sched.aclose()

    clock.run(main())
    # work-conserving: each admission is at the earliest time its arrival, FIFO order and
    # the window (and, paced, the even spacing) allow, so the rate is N per span exactly
    expect: list[float] = []
    for i, at in enumerate(arrivals):
        t = max(at, expect[-1] if expect else at)
        if i >= n:
            t = max(t, expect[i - n] + span)
        if paced and i:
            t = max(t, expect[-1] + span / n)
        expect.append(t)
    assert sent == pytest.approx(expect, rel=0, abs=1e-6)
    if spread == 0.0:
        elapsed = max(sent) - START
        allowed = (math.ceil(k / n) - 1) * span if not paced else (k - 1) * span / n
        assert elapsed <= allowed / 0.99 + 1e-6
    assert max_in_sliding(sent, span) <= n


@SETTINGS
@given(
    n=st.integers(1, 6),
    used=st.integers(0, 6),
    deadlines=st.lists(st.floats(0.0, 600.0), min_size=1, max_size=25),
    noise=st.lists(st.sampled_from(list(Lane)), max_size=15),
)
def test_deadlines_are_met_whenever_feasible(
    n: int, used: int, deadlines: list[float], noise: list[Lane]
) -> None:
    """EDF: if the deadlines can be met in some order, every one of them is met."""
    used = min(used, n)
    lim = Limits(minute=Limit(n, 60.0), day=None)
    span = lim.windows()[0].span
    # the i-th free place after `used` admissions at START
    places = [START + ((used + i) // n) * span for i in range(len(deadlines))]
    feasible = all(p <= START + d for p, d in zip(places, sorted(deadlines), strict=True))
    clock = VirtualClock(START)
    met: dict[int, bool] = {}
    predicted: dict[int, bool] = {}

    async def one(sched: Scheduler, i: int, d: float | None, lane: Lane = Lane.DEFAULT) -> None:
        deadline = None if d is None else START + d
        async with sched.slot(lane, deadline=deadline) as p:
            if deadline is not None:
                met[i] = p.sent_at <= deadline

    async def main() -> None:
        sched = Scheduler(replace(lim, max_in_flight=None), clock=clock)
        for _ in range(used):
            sched.release(await sched.acquire())
        tasks = []
        # deadlines enter in increasing order, so no later arrival overtakes an earlier one
        # and earliest_admission(deadline=) must predict each outcome exactly
        for i, d in enumerate(sorted(deadlines)):
            predicted[i] = sched.earliest_admission(deadline=START + d) <= START + d
            tasks.append(asyncio.create_task(one(sched, i, d)))
            await asyncio.sleep(0)
        tasks += [asyncio.create_task(one(sched, -1, None, lane)) for lane in noise]
        await asyncio.gather(*tasks)
        await sched.aclose()

    clock.run(main())
    assert met == predicted
    if feasible:
        assert all(met.values())
