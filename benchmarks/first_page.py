"""The small first page (issue 42): what a stream with no ``size`` and no ``limit`` costs a
full read, side by side with the same read at ``size=10_000`` (the engine's), and what a loop
that stops after one event reads.

For each total of events, against the simulator (its limits lifted; a clock 20x real time,
a scroll window of 3 s, so that no scroll lapses): the requests and the objects of a full
read both ways, and the objects of a loop that breaks after its first event.
Run: ``python benchmarks/first_page.py`` (a few seconds).
"""

from __future__ import annotations

import argparse
import asyncio

from asyncwifi import Client, Limits, ScaledClock
from asyncwifi.testing import Simulator


async def _read(api: Client, sim: Simulator, **options: int) -> tuple[int, int, int]:
    """A full read: (records, requests, objects served)."""
    before = sim.counters.objects_served["events"]
    stream = api.events.list(**options)
    records = sum([1 async for _ in stream])
    return records, stream.requests, sim.counters.objects_served["events"] - before


async def _one(total: int) -> tuple[int, tuple[int, int, int], tuple[int, int, int], int]:
    sim = Simulator(clock=ScaledClock(20), events=total, rate_limit_mode="off")
    async with sim, sim.client(limits=Limits(minute=None, day=None)) as api:
        before = sim.counters.objects_served["events"]
        async for _ in api.events.list():
            break
        stopped = sim.counters.objects_served["events"] - before
        small = await _read(api, sim)
        full = await _read(api, sim, size=10_000)
    return total, small, full, stopped


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--totals", default="50,500,9950,10000,10100,25000,100000,250000")
    args = parser.parse_args()
    print("events    | no size: requests objects | size=10000: requests objects | break: objects")
    for total in map(int, args.totals.split(",")):
        total, small, full, stopped = await _one(total)
        assert small[0] == full[0] == total, (small, full, total)
        print(f"{total:>9,} | {small[1]:>17} {small[2]:>8,} | {full[1]:>20} {full[2]:>8,} "
              f"| {stopped:>14,}")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
