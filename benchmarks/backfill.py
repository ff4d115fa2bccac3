"""Backfill benchmark: asyncwifi's export engine against a hand-written aiohttp loop.

Both pull the same events from one simulator running in its own process with the rate
limit lifted (``rate_limit_mode="off"``, and no limit in the client either), and write
JSON Lines:

* **asyncwifi**: ``asyncwifi.backfill.events_backfill`` (what ``asyncwifi events backfill``
  runs): 6-hour slices streamed 4 at a time, each record written as the server's own bytes,
  every page fsync'ed and committed to the SQLite state file (resumable, exactly once);
* **hand-written loop**: one scroll with aiohttp, ``json.loads`` of each page and
  ``json.dumps`` of each record, one write per record (the way a user would write it;
  not resumable, no fsync).

Each run is its own subprocess; its peak RSS comes from ``os.wait4`` (the child's own
``ru_maxrss``). The engine also runs over 100,000 events to show that its memory does not
grow with the total. Prints events per second (median of ``--repeat`` interleaved runs,
2 by default), peak RSS and the ratios. Run: ``python benchmarks/backfill.py`` (about a
minute); ``--events 200000 --repeat 1`` for a quick one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

EVENTS_PER_DAY = 100_000
START = datetime(2026, 1, 1, tzinfo=UTC)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


# -- the two contenders, each run in a child process -------------------------------------------


async def run_engine(info: dict[str, Any], since: datetime, until: datetime, out: Path) -> int:
    from asyncwifi import Limits
    from asyncwifi._client import Client
    from asyncwifi.backfill._jobs import events_backfill

    async with Client(
        info["client_key"],
        info["client_secret"],
        base_url=info["base_url"],
        organization=info["organization"],
        allow_http=True,
        limits=Limits(minute=None, day=None),  # the limit is lifted on both sides
        on_quota_exhausted="raise",
    ) as api:
        job = events_backfill(
            api,
            since=since,
            until=until,
            out=out,
            state=out.with_name(out.name + ".state"),
            # 6 h slices (25,000 events each here): 4 at a time, whatever the total
            slice_size=timedelta(hours=6),
            concurrency=4,
        )
        outcome = await job.run()
        assert outcome.status == "done"
        return outcome.progress.records


async def run_loop(info: dict[str, Any], since: datetime, until: datetime, out: Path) -> int:
    """What a user would write by hand: one scroll, json in, json out."""
    import aiohttp

    base = info["base_url"]
    written = 0
    async with aiohttp.ClientSession() as session:
        async with session.post(
            base + "/v1/sts/login/services",
            json={"clientKey": info["client_key"], "clientSecret": info["client_secret"]},
        ) as resp:
            token = (await resp.json())["token"]
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        url = f"{base}/v1/organizations/{info['organization']}/events"
        params = {
            "dateStart": _iso(since),
            "dateEnd": _iso(until - timedelta(milliseconds=1)),
            "size": "10000",
            "sortBy": "utcTime",
            "enableScroll": "true",
        }
        with out.open("w", encoding="utf-8") as fh:
            query = dict(params)
            while True:
                async with session.get(url, params=query, headers=headers) as resp:
                    resp.raise_for_status()
                    page = json.loads(await resp.read())
                events = page.get("events") or []
                if not events:
                    break
                for event in events:
                    fh.write(json.dumps(event) + "\n")
                written += len(events)
                query = {**params, "scrollId": page["scrollId"]}
    return written


def child(kind: str, info_json: str, since: str, until: str, out: str) -> None:
    # imports happen before the clock starts: both sides are timed on the transfer alone
    if kind == "engine":
        import asyncwifi._client
        import asyncwifi.backfill._jobs  # noqa: F401
    else:
        import aiohttp  # noqa: F401
    info = json.loads(info_json)
    start, end = datetime.fromisoformat(since), datetime.fromisoformat(until)
    runner = run_engine if kind == "engine" else run_loop
    began = time.perf_counter()
    records = asyncio.run(runner(info, start, end, Path(out)))
    seconds = time.perf_counter() - began
    print(json.dumps({"records": records, "seconds": seconds}))


# -- the parent: one simulator, children measured one by one ------------------------------------


def measure(kind: str, info: dict[str, Any], events: int, workdir: Path) -> dict[str, Any]:
    days = events / EVENTS_PER_DAY
    since, until = START, START + timedelta(days=days)
    out = workdir / f"{kind}-{events}-{time.monotonic_ns()}.jsonl"
    cmd = [
        sys.executable,
        __file__,
        "--child",
        kind,
        json.dumps(info),
        since.isoformat(),
        until.isoformat(),
        str(out),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.stdout is not None
    line = proc.stdout.read()
    proc.stdout.close()
    if proc.returncode != 0:
        raise SystemExit(f"{kind} child failed ({proc.returncode})")
    result: dict[str, Any] = json.loads(line)
    result["peak_rss_mb"] = usage.ru_maxrss / 1024  # Linux: KiB
    with out.open("rb") as fh:
        lines = sum(1 for _ in fh)
    if lines != result["records"] or lines != events:
        raise SystemExit(f"{kind}: wrote {lines} lines, expected {events}")
    for path in workdir.glob(out.name + "*"):
        path.unlink()
    return result


@contextlib.contextmanager
def simulator(events: int) -> Iterator[dict[str, Any]]:
    """A simulator in its own process holding exactly ``events`` events, limit off."""
    from asyncwifi.testing._process import SimulatorProcess

    days = events / EVENTS_PER_DAY
    print(
        f"simulator: {events:,} events over {days:g} days in a separate process "
        "(rate limit off), warming...",
        flush=True,
    )
    with SimulatorProcess(
        events=events,
        events_start=START.isoformat(),
        events_end=(START + timedelta(days=days)).isoformat(),
        contacts=1_000,
        rate_limit_mode="off",
        warm=True,
        startup_timeout=300,
    ) as sim:
        yield {k: sim.info[k] for k in ("base_url", "client_key", "client_secret", "organization")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the big run")
    parser.add_argument("--small", type=int, default=100_000, help="events in the small run")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each (median)")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return

    runs: dict[str, list[dict[str, Any]]] = {"engine": [], "loop": []}
    with tempfile.TemporaryDirectory(prefix="asyncwifi-bench-", dir=".") as tmp:
        workdir = Path(tmp)
        with simulator(args.events) as info:
            for _ in range(args.repeat):
                for kind in ("engine", "loop"):
                    runs[kind].append(measure(kind, info, args.events, workdir))
        with simulator(args.small) as info:
            small = [measure("engine", info, args.small, workdir)]

    def rate(rs: list[dict[str, Any]]) -> float:
        return statistics.median(r["records"] / r["seconds"] for r in rs)

    def rss(rs: list[dict[str, Any]]) -> float:
        return statistics.median(r["peak_rss_mb"] for r in rs)

    engine_rate, loop_rate = rate(runs["engine"]), rate(runs["loop"])
    print()
    print(f"{'':40} {'events/s':>12} {'peak RSS':>10}")
    print(
        f"{'asyncwifi backfill (' + format(args.events, ',') + ')':40} "
        f"{engine_rate:>12,.0f} {rss(runs['engine']):>8.1f} MB"
    )
    print(
        f"{'hand-written loop (' + format(args.events, ',') + ')':40} "
        f"{loop_rate:>12,.0f} {rss(runs['loop']):>8.1f} MB"
    )
    print(
        f"{'asyncwifi backfill (' + format(args.small, ',') + ', memory)':40} "
        f"{rate(small):>12,.0f} {rss(small):>8.1f} MB"
    )
    print()
    print(f"speed: asyncwifi / loop = {engine_rate / loop_rate:.2f}x (target >= 2x)")
    grow = rss(runs["engine"]) - rss(small)
    print(
        f"memory: asyncwifi peak RSS {rss(small):.1f} MB at {args.small:,} events, "
        f"{rss(runs['engine']):.1f} MB at {args.events:,} ({grow:+.1f} MB for "
        f"{args.events / args.small:g}x the events)"
    )


if __name__ == "__main__":
    main()
