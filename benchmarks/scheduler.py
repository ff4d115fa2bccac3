"""The rate-aware scheduler side by side with aiolimiter and pyrate-limiter, in one run.

Part 1, admission overhead (real time, non-binding limits): ``C`` tasks each loop
``acquire -> await asyncio.sleep(0) -> release``; the same loop without any limiter is the
baseline, and *overhead* = time per admission minus the baseline's measured in the same
round, median over rounds (pairing keeps load drift on a shared machine out of the ratio).
*full GCs* counts the full garbage collections inside the timings (all rounds): 10,000
callers each holding a permit object can tip the collector into one more pass over every
live object (some 130,000 here), which a limiter that hands out nothing never pays.
Part 1b, the same with a binding limit (100 a second), so that 1, 100 or 10,000 tasks wait
in the queue: virtual time (below), real CPU per admission, against aiolimiter's queue.

Part 2, the guarantee under saturation (virtual time: an event loop whose clock jumps to
the next timer whenever every task waits, and moves 1 us per pass of the loop, so every
limiter, ours included, runs on ``loop.time()``): the most admissions seen in any 60-s
sliding window and in any UTC clock minute, and the share of a day's 15,000 sent in the
first 24 hours.

    python benchmarks/scheduler.py            # default run, well under a minute
    python benchmarks/scheduler.py --quick    # fewer rounds
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import gc
import logging
import math
import selectors
import statistics
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from aiolimiter import AsyncLimiter
from pyrate_limiter import Duration, InMemoryBucket, Limiter, Rate, SingleBucketFactory
from pyrate_limiter.clocks import AbstractClock

from asyncwifi.ratelimit import Limit, Limits, Scheduler

#: the virtual runs start at 2023-11-14 22:13:00 UTC, on a clock minute
EPOCH = 1_699_999_980.0
#: virtual time one pass of the event loop takes
TICK = 1e-6


# -- a virtual-time event loop (loop.time() is virtual, so third-party limiters follow) --


class _IdleAdvance(selectors.BaseSelector):
    """Where the loop would block waiting for a timer, jump its clock to that timer."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        self._loop = loop
        self._inner = selectors.DefaultSelector()

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._inner.unregister(fileobj)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        # every pass of the loop costs a microsecond of virtual time, as real time would
        # pass: a limiter that re-arms a timer "now" on a rounding error (aiolimiter does)
        # would otherwise spin forever at one instant
        self._loop.vt += max(TICK, timeout or 0.0)
        return self._inner.select(0)

    def close(self) -> None:
        self._inner.close()

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self._inner.get_map()


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self.vt = 0.0  # small numbers: the loop's clock resolution still separates timers
        super().__init__(_IdleAdvance(self))

    def time(self) -> float:
        return self.vt


class LoopClock:
    """asyncwifi's Clock on the running loop's time (virtual here), from ``EPOCH``."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def now(self) -> float:
        return EPOCH + self.loop.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def real(self, seconds: float) -> float:
        return seconds


class LoopMsClock(AbstractClock):
    """pyrate-limiter's clock (integer ms) on the running loop's time."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def now(self) -> int:
        return int((EPOCH + self.loop.time()) * 1000)


def run_virtual(main: Callable[[], Awaitable[Any]]) -> Any:
    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        return runner.run(main())


# -- limiters under test --------------------------------------------------------------

Acquire = Callable[[], Awaitable[Any]]


class Subject:
    """A limiter as ``enter()`` / ``leave()`` coroutines (one shape for all of them)."""

    def __init__(self, name: str, make: Callable[[], tuple[Acquire, Acquire]]) -> None:
        self.name = name
        self.make = make


def ours(
    limits: Limits, *, virtual: bool = True, **kw: Any
) -> Callable[[], tuple[Acquire, Acquire]]:
    """Our scheduler; on the loop's (virtual) time, or the production SystemClock."""

    def make() -> tuple[Acquire, Acquire]:
        # a clock on this run's loop (each run has its own loop)
        clock = LoopClock(asyncio.get_running_loop()) if virtual else None
        sched = Scheduler(replace(limits, max_in_flight=None), clock=clock, **kw)

        async def enter() -> Any:
            return await sched.acquire()

        async def leave(seq: Any) -> None:
            sched.release(seq)

        return enter, leave  # type: ignore[return-value]

    return make


def aio(*limiters: tuple[float, float]) -> Callable[[], tuple[Acquire, Acquire]]:
    def make() -> tuple[Acquire, Acquire]:
        chain = [AsyncLimiter(rate, period) for rate, period in limiters]

        async def enter() -> None:
            for lim in chain:
                await lim.acquire()

        async def leave(_: Any) -> None:
            return None

        return enter, leave  # type: ignore[return-value]

    return make


def pyrate(*rates: tuple[int, int]) -> Callable[[], tuple[Acquire, Acquire]]:
    def make() -> tuple[Acquire, Acquire]:
        bucket = InMemoryBucket([Rate(n, ms) for n, ms in rates])
        bucket._clock = LoopMsClock(asyncio.get_running_loop())  # its only clock hook
        limiter = Limiter(SingleBucketFactory(bucket, schedule_leak=False))

        async def enter() -> None:
            await limiter.try_acquire_async("key")

        async def leave(_: Any) -> None:
            return None

        return enter, leave  # type: ignore[return-value]

    return make


def baseline() -> tuple[Acquire, Acquire]:
    async def enter() -> None:
        return None

    async def leave(_: Any) -> None:
        return None

    return enter, leave  # type: ignore[return-value]


# -- part 1: overhead ---------------------------------------------------------------------


#: full (generation 2) garbage collections so far: part 1 reports those inside its timings
FULL_GC = [0]
gc.callbacks.append(
    lambda phase, info: (
        FULL_GC.__setitem__(0, FULL_GC[0] + 1)
        if phase == "start" and info["generation"] == 2
        else None
    )
)


async def _overhead_once(
    make: Callable[[], tuple[Acquire, Acquire]], c: int, ops: int
) -> tuple[float, int]:
    """Wall seconds per admission with ``c`` concurrent tasks, ``ops`` admissions in all,
    and the full garbage collections that ran meanwhile (in the timing). One admission
    goes before the timing, for every limiter: a fresh scheduler's first request is a cold
    start's probe, which the others wait for (one answer, at most a minute per key)."""
    enter, leave = make()
    per_task = max(1, ops // c)
    await leave(await enter())

    async def worker() -> None:
        for _ in range(per_task):
            p = await enter()
            await asyncio.sleep(0)
            await leave(p)

    gc.collect()
    t0, full = time.perf_counter(), FULL_GC[0]
    await asyncio.gather(*(worker() for _ in range(c)))
    return (time.perf_counter() - t0) / (per_task * c), FULL_GC[0] - full


def part_overhead(rounds: int, ops: int) -> None:
    huge = 10**9
    subjects = [
        ("none (baseline)", baseline),
        (
            "asyncwifi Scheduler",
            ours(Limits(minute=Limit(huge, 60.0), day=Limit(huge, 86_400.0)), virtual=False),
        ),
        ("aiolimiter AsyncLimiter", aio((huge, 60.0))),
        ("pyrate-limiter 4 (in-memory)", pyrate((huge, Duration.MINUTE.value))),
    ]
    print("1. Admission overhead, non-binding limits (real time; median of", rounds, "rounds)")
    print(
        f"   {'concurrency':>11}  {'limiter':<30} {'us/admission':>12} {'overhead us':>12}"
        f" {'full GCs':>9}"
    )
    for c in (1, 100, 10_000):
        samples: dict[str, list[float]] = {name: [] for name, _ in subjects}
        extra: dict[str, list[float]] = {name: [] for name, _ in subjects}
        gcs = dict.fromkeys(samples, 0)  # full collections inside the timings, all rounds
        for _ in range(rounds):
            base = asyncio.run(_overhead_once(baseline, c, ops))[0] * 1e6
            for name, make in subjects:  # interleaved, so load spikes hit every subject
                v, full = asyncio.run(_overhead_once(make, c, ops))
                samples[name].append(v * 1e6)
                extra[name].append(v * 1e6 - base)  # paired with this round's baseline
                gcs[name] += full
        med = {name: statistics.median(v) for name, v in samples.items()}
        over = {name: max(0.0, statistics.median(v)) for name, v in extra.items()}
        for name, _ in subjects:
            print(f"   {c:>11,}  {name:<30} {med[name]:>12.2f} {over[name]:>12.2f} {gcs[name]:>9}")
        ratio = over["asyncwifi Scheduler"] / max(over["aiolimiter AsyncLimiter"], 1e-9)
        ratio_p = over["asyncwifi Scheduler"] / max(over["pyrate-limiter 4 (in-memory)"], 1e-9)
        verdict = "ok" if ratio <= 2.0 else "ABOVE TARGET"
        print(
            f"   {'':>11}  overhead ratio ours/aiolimiter = {ratio:.2f}x"
            f" (target <= 2x: {verdict}); ours/pyrate = {ratio_p:.2f}x"
        )
    print()


# -- part 1b: overhead with waiters in the queue -------------------------------------------


def _queued_once(make: Callable[[], tuple[Acquire, Acquire]], c: int, ops: int) -> float:
    """Real seconds per admission when ``c`` tasks queue on a binding limit (virtual time:
    the waits cost nothing, the queue's bookkeeping and wake-ups are what is measured)."""

    async def main() -> float:
        enter, leave = make()
        per_task = max(1, ops // c)

        async def worker() -> None:
            for _ in range(per_task):
                await leave(await enter())

        gc.collect()
        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(c)))
        return (time.perf_counter() - t0) / (per_task * c)

    result: float = run_virtual(main)
    return result


def part_waiters(rounds: int, ops: int) -> None:
    """Our queue (one heap, one timer) against aiolimiter's (a heap and call_at), both
    binding at 100 a second, with 1, 100 and 10,000 tasks waiting."""
    subjects = [
        ("none (baseline, no wait)", baseline),
        ("asyncwifi Scheduler", ours(Limits(minute=Limit(100, 1.0), day=None))),
        ("aiolimiter AsyncLimiter", aio((100, 1.0))),
    ]
    print("1b. Admission overhead with waiters: a binding 100/s limit (virtual time; real CPU)")
    print(f"   {'waiters':>11}  {'limiter':<30} {'us/admission':>12} {'overhead us':>12}")
    for c in (1, 100, 10_000):
        samples: dict[str, list[float]] = {name: [] for name, _ in subjects}
        extra: dict[str, list[float]] = {name: [] for name, _ in subjects}
        for _ in range(rounds):
            base = _queued_once(baseline, c, ops) * 1e6
            for name, make in subjects:
                v = _queued_once(make, c, ops) * 1e6
                samples[name].append(v)
                extra[name].append(v - base)
        med = {name: statistics.median(v) for name, v in samples.items()}
        over = {name: max(0.0, statistics.median(v)) for name, v in extra.items()}
        for name, _ in subjects:
            print(f"   {c:>11,}  {name:<30} {med[name]:>12.2f} {over[name]:>12.2f}")
        ratio = over["asyncwifi Scheduler"] / max(over["aiolimiter AsyncLimiter"], 1e-9)
        verdict = "ok" if ratio <= 2.0 else "ABOVE TARGET"
        print(
            f"   {'':>11}  overhead ratio ours/aiolimiter = {ratio:.2f}x (target <= 2x: {verdict})"
        )
    print()


# -- part 2: the guarantee ----------------------------------------------------------------


def max_sliding(ts: list[float], span: float) -> int:
    ts = sorted(ts)
    return max((bisect.bisect_left(ts, t + span) - i for i, t in enumerate(ts)), default=0)


def max_fixed(ts: list[float], period: float) -> int:
    return max(Counter(math.floor(t / period) for t in ts).values(), default=0)


def saturate(
    make: Callable[[], tuple[Acquire, Acquire]], horizon: float, workers: int
) -> list[float]:
    """Admission times (epoch seconds) while ``workers`` keep asking until ``horizon``."""

    async def main() -> list[float]:
        enter, leave = make()
        loop = asyncio.get_running_loop()
        sent: list[float] = []

        async def worker() -> None:
            while loop.time() < horizon:
                p = await enter()
                if loop.time() >= horizon:
                    return
                sent.append(EPOCH + loop.time())
                await asyncio.sleep(0.2)  # the request's round trip
                await leave(p)

        tasks = [asyncio.create_task(worker()) for _ in range(workers)]
        await asyncio.sleep(horizon + 1.0)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return sent

    result: list[float] = run_virtual(main)
    return result


def part_windows() -> None:
    minute = Limits(minute=Limit(60, 60.0), day=None)
    subjects = [
        ("asyncwifi Scheduler (60/60 s)", ours(minute)),
        ("aiolimiter AsyncLimiter(60, 60)", aio((60, 60.0))),
        ("aiolimiter AsyncLimiter(1, 1)", aio((1, 1.0))),
        ("pyrate-limiter Rate(60, MINUTE)", pyrate((60, Duration.MINUTE.value))),
    ]
    horizon = 600.0
    print("2. Saturation for 10 virtual minutes, 16 workers, 0.2 s per request (limit: 60/min)")
    print(
        f"   {'limiter':<34} {'max any 60s':>11} {'max UTC min':>11} {'per minute':>10}"
        f" {'vs 60':>6} {'1st s':>6}"
    )
    rows = {}
    for name, make in subjects:
        ts = saturate(make, horizon, 16)
        rows[name] = ts
        rate = len(ts) / (horizon / 60.0)
        first = sum(1 for t in ts if t < EPOCH + 1.0)
        print(
            f"   {name:<34} {max_sliding(ts, 60.0):>11} {max_fixed(ts, 60.0):>11}"
            f" {rate:>10.1f} {max_sliding(ts, 60.0) / 60:>5.2f}x {first:>6}"
        )
    worst_ours = max_sliding(rows[subjects[0][0]], 60.0)
    worst_aio = max_sliding(rows[subjects[1][0]], 60.0)
    print(
        f"   worst 60-s window: ours {worst_ours} (target exactly 60:"
        f" {'ok' if worst_ours == 60 else 'NO'}), AsyncLimiter(60, 60) {worst_aio}"
        f" = {worst_aio / worst_ours:.2f}x ours"
    )
    print()


def part_day() -> None:
    subjects = [
        ("asyncwifi Scheduler (defaults)", ours(Limits())),
        ("AsyncLimiter(60,60)+(15000,86400)", aio((60, 60.0), (15_000, 86_400.0))),
        (
            "pyrate Rate(60,MIN)+Rate(15000,DAY)",
            pyrate((60, Duration.MINUTE.value), (15_000, Duration.DAY.value)),
        ),
    ]
    horizon = 2 * 86_400.0
    print("3. Two virtual days of saturation (16 workers), limits 60/min and 15,000/day")
    print(
        f"   {'limiter':<36} {'max any 24h':>11} {'of 15,000':>9} {'max UTC day':>11}"
        f" {'max any 60s':>11} {'max UTC min':>11}"
    )
    worst = {}
    for name, make in subjects:
        t0 = time.perf_counter()
        ts = saturate(make, horizon, 16)
        real = time.perf_counter() - t0
        day = max_sliding(ts, 86_400.0)
        worst[name] = day
        print(
            f"   {name:<36} {day:>11,} {day / 15_000:>8.0%} {max_fixed(ts, 86_400.0):>11,}"
            f" {max_sliding(ts, 60.0):>11} {max_fixed(ts, 60.0):>11}   ({real:.1f} s real)"
        )
    names = [n for n, _ in subjects]
    print(
        f"   worst 24 h: ours {worst[names[0]]:,} ({worst[names[0]] / 15_000:.0%}),"
        f" chained AsyncLimiters {worst[names[1]]:,} = {worst[names[1]] / worst[names[0]]:.2f}x"
    )
    print()


def main() -> None:
    logging.getLogger("asyncwifi").addHandler(logging.NullHandler())  # quiet "day spent" notes
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="fewer rounds and admissions")
    args = ap.parse_args()
    rounds, ops = (3, 20_000) if args.quick else (7, 30_000)
    t0 = time.perf_counter()
    part_overhead(rounds, ops)
    part_waiters(rounds, ops // 2)
    part_windows()
    part_day()
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
