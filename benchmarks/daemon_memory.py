"""Daemon memory benchmark: a sync daemon over a scaled week, its memory day by day (issue 43).

One process: a simulator with events arriving (``--per-day``, a tenth of them up to 8
minutes late; contacts changing) and an ``asyncwifi.sync.Syncer`` running for ever into
SQLite, on one scaled clock (``--speed``; a week in about a minute and a half). At the end
of each clock day: the traced Python memory after a full collection (``tracemalloc``) and
the RSS (``/proc/self/statm``), of the whole process and of the daemon's own allocations
(the simulator's excluded: its log of arrived events, about 26 bytes an event, and its
bounded caches); then the daemon's allocation sites that grew most from the first day to
the last (lookback ids, the limiter's logs, metrics, the object plan's observations would
show there). Flat is the target.

Run: ``python benchmarks/daemon_memory.py`` (``--days 2 --speed 4000`` for a quick one).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import load_line

from asyncwifi import Limits, ScaledClock
from asyncwifi.engine import open_destination
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.testing import Simulator

DAY = 86_400.0
#: 2026-11-02T00:00:00Z: the week stays inside one month (the object allowance's)
START = datetime(2026, 11, 2, tzinfo=UTC).timestamp()


#: the daemon's own allocations: not the simulator's (its log of arrived events, its caches)
_DAEMON = (
    tracemalloc.Filter(False, "*/asyncwifi/testing/*"),
    tracemalloc.Filter(False, "*/aiohttp/web*"),
    tracemalloc.Filter(False, tracemalloc.__file__),
)


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


async def week(days: int, speed: float, per_day: int, workdir: Path) -> None:
    clock = ScaledClock(speed, start=START + 60)
    async with Simulator(
        clock=clock,
        contacts=2_000,
        events=per_day,  # the day before: the first run's read
        events_start=START - DAY,
        events_end=START,
    ) as sim:
        feed = sim.start_feed(
            per_day / DAY, tick=300.0, late_share=0.1, late_by=480.0, contact_changes=20 / DAY
        )
        async with sim.client(limits=Limits(month=None)) as api:
            store = open_destination(f"sqlite:///{workdir / 'week.db'}")
            since = datetime.fromtimestamp(START - DAY, UTC)
            syncer = Syncer(api, store, options=SyncOptions(since=since, poll_interval=600.0))
            task = asyncio.create_task(syncer.run_forever())
            first: tracemalloc.Snapshot | None = None
            last = None
            print(f"{'day':>4} {'traced MB':>10} {'daemon MB':>10} {'RSS MB':>8} {'arrived':>9}")
            try:
                for day in range(1, days + 1):
                    while clock.now() < START + day * DAY and not task.done():
                        await asyncio.sleep(0.05)
                    if task.done():
                        task.result()
                    gc.collect()
                    traced = tracemalloc.get_traced_memory()[0] / 2**20
                    last = tracemalloc.take_snapshot().filter_traces(_DAEMON)
                    own = sum(s.size for s in last.statistics("filename")) / 2**20
                    print(
                        f"{day:4d} {traced:10.1f} {own:10.1f} {rss_mb():8.1f} {feed.added:9,}",
                        flush=True,
                    )
                    first = first or last
            finally:
                syncer.stop()
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                await store.close()
    if first is not None and last is not None:
        print(f"the daemon's sites that grew most from day 1 to day {days}:")
        for stat in last.compare_to(first, "lineno")[:10]:
            frame = stat.traceback[0]
            where = f"{Path(frame.filename).name}:{frame.lineno}"
            print(f"  {stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+8d} objects  {where}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--speed", type=float, default=6_000.0, help="clock seconds a second")
    parser.add_argument("--per-day", type=int, default=5_000, help="events arriving a day")
    args = parser.parse_args()
    print(load_line(), flush=True)
    tracemalloc.start()
    with tempfile.TemporaryDirectory(prefix="asyncwifi-bench-") as tmp:
        asyncio.run(week(args.days, args.speed, args.per_day, Path(tmp)))


if __name__ == "__main__":
    main()
