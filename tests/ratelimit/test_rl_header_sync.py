"""Header sync in virtual time: a remaining count caps admissions until the end the server
names (``RateLimit-Reset``), whatever the gateway's windows; then one probe finds the next.
"""

from __future__ import annotations

import asyncio
from typing import Any

from asyncwifi.ratelimit import Limit, Limits, Scheduler
from tests._virtualclock import VirtualClock
from tests.ratelimit.rlhelpers import START

# START is 20 s past a UTC minute: a clock-grid guess would end a cap at START + 40


def minute(remaining: int, reset: float | None = None) -> dict[str, str]:
    h = {
        "X-RateLimit-Limit-Minute": "60",
        "X-RateLimit-Remaining-Minute": str(remaining),
        "RateLimit-Limit": "60",
        "RateLimit-Remaining": str(remaining),
    }
    if reset is not None:
        h["RateLimit-Reset"] = f"{reset:g}"
    return h


def scheduler(clock: VirtualClock) -> Scheduler:
    return Scheduler(Limits(minute=Limit(60, 60.0), day=None, max_in_flight=None), clock=clock)


async def admit(s: Scheduler, out: list[float]) -> Any:
    async with s.slot() as p:
        out.append(p.sent_at)
    return p


def test_the_cap_ends_where_the_server_says_not_on_the_clock_grid() -> None:
    clock = VirtualClock(START)
    out: list[float] = []

    async def main() -> None:
        s = scheduler(clock)
        first = await admit(s, out)
        # a sliding (or skewed) gateway: nothing left, room again in 7 s
        first.observe(200, minute(0, 7))
        probe = await admit(s, out)
        # one probe only, until its answer arrives
        waiting = asyncio.ensure_future(admit(s, out))
        await clock.sleep(1)
        assert not waiting.done()
        probe.observe(200, minute(3, 5))  # the probe's answer: 3 more within 5 s
        await waiting
        await asyncio.gather(*(admit(s, out) for _ in range(3)))
        await s.aclose()

    clock.run(main())
    assert out[1] == START + 7  # not START + 40, the clock grid's minute end
    assert out[2] == START + 8  # right after the probe's answer
    assert out[3:5] == [START + 8] * 2  # 3 more after the probe: then capped again
    assert out[5] == START + 13


def test_inside_a_cap_a_report_only_lowers_it() -> None:
    clock = VirtualClock(START)
    out: list[float] = []

    async def main() -> None:
        s = scheduler(clock)
        ps = [await admit(s, out) for _ in range(3)]
        ps[0].observe(200, minute(2, 10))  # at most #3 before START + 10
        ps[2].observe(200, minute(30, 10))  # higher: ignored
        await admit(s, out)  # the probe after START + 10
        await s.aclose()

    clock.run(main())
    assert out[3] == START + 10


def test_a_report_from_before_the_cap_end_does_not_answer_the_probe() -> None:
    clock = VirtualClock(START)
    out: list[float] = []

    async def main() -> None:
        s = scheduler(clock)
        old = await admit(s, out)
        marker = await admit(s, out)
        marker.observe(200, minute(0, 5))
        await admit(s, out)  # the probe, at START + 5
        waiting = asyncio.ensure_future(admit(s, out))
        await clock.sleep(1)
        old.observe(200, minute(50, 40))  # sent before the cap's end: stale, no answer
        await clock.sleep(1)
        assert not waiting.done()
        await waiting  # no answer at all: the probe lapses after the shortest span
        await s.aclose()

    clock.run(main())
    assert out[2] == START + 5
    assert out[3] == START + 5 + 61


def test_without_a_reset_the_clock_grid_ends_the_cap_and_no_probe_follows() -> None:
    clock = VirtualClock(START)
    out: list[float] = []

    async def main() -> None:
        s = scheduler(clock)
        p = await admit(s, out)
        p.observe(200, {"X-RateLimit-Remaining-Minute": "0"})
        await asyncio.gather(*(admit(s, out) for _ in range(3)))
        await s.aclose()

    clock.run(main())
    assert out[1:] == [START + 40] * 3  # Kong's UTC minute, then the local log alone
