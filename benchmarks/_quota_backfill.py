"""Backfill requests against the request floor (issue 14): asyncwifi and a hand-written loop.

The floor of a backfill is ``ceil(events / 10,000)`` pages plus one ending page per
concurrent scroll (DESIGN.md, "The request floor"). Each workload runs against a fresh
in-process simulator (rate limit off, nested records, the API's own shape) twice:

* **asyncwifi**: ``asyncwifi.backfill.events_backfill`` with its defaults (4 concurrent
  scrolls, the range cut into 4 long time cursors, pages of 10,000), into a temporary file;
* **hand-written**: the obvious aiohttp loop: one scroll over the whole range, pages of
  10,000, ``scrollId`` until an empty page.

Only data requests count (the login is the same one request for both). ``rows()`` returns
``(workload, client, requests, floor, ratio)`` rows; the asyncwifi rows also say what the
plan's estimate (what ``--dry-run`` prints) predicted. ``benchmarks/quota.py`` imports it;
``python benchmarks/_quota_backfill.py [--scale 0.1]`` prints the table on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PAGE = 10_000
CONCURRENCY = 4
START = datetime(2026, 1, 1, tzinfo=UTC)

#: (name, days, events per day): the README's job, dense days, sparse days
WORKLOADS = (
    ("README job: 181 days x 10,000", 181, 10_000),
    ("dense: 10 days x 40,000", 10, 40_000),
    ("sparse: 60 days x 300", 60, 300),
)


class Row(NamedTuple):
    workload: str
    client: str
    requests: int
    floor: int
    ratio: float
    #: asyncwifi only: the data requests the plan's estimate predicted (``--dry-run``)
    estimated: int | None = None


async def _asyncwifi(
    sim: object, since: datetime, until: datetime, per_day: float
) -> tuple[int, int]:
    from asyncwifi import Client, Limits
    from asyncwifi.backfill import events_backfill
    from asyncwifi.backfill._plan import estimate, even_slice_size, plan_slices

    plan = estimate(
        plan_slices(since, until, even_slice_size(since, until, CONCURRENCY)),
        events_per_day=per_day,
        page_size=PAGE,
    )
    with tempfile.TemporaryDirectory() as tmp:
        async with Client(
            sim.client_key,  # type: ignore[attr-defined]
            sim.client_secret,  # type: ignore[attr-defined]
            base_url=sim.base_url,  # type: ignore[attr-defined]
            organization=sim.organization,  # type: ignore[attr-defined]
            allow_http=True,
            limits=Limits(minute=None, day=None),
        ) as api:
            job = events_backfill(
                api,
                since=since,
                until=until,
                out=Path(tmp) / "events.jsonl",
                state=Path(tmp) / "events.state",
                concurrency=CONCURRENCY,
                page_size=PAGE,
                fsync=False,
            )
            outcome = await job.run()
    return outcome.progress.requests_run, plan.page_requests


async def _hand(sim: object, since: datetime, until: datetime) -> int:
    """The obvious loop: one scroll, pages of 10,000, until an empty page."""
    import json

    import aiohttp

    requests = 0
    base = sim.base_url  # type: ignore[attr-defined]
    async with aiohttp.ClientSession() as session:
        login = {"clientKey": sim.client_key, "clientSecret": sim.client_secret}  # type: ignore[attr-defined]
        async with session.post(f"{base}/v1/sts/login/services", json=login) as resp:
            token = (await resp.json())["token"]
        headers = {"Authorization": f"Bearer {token}"}
        url = f"{base}/v1/organizations/{sim.organization}/events"  # type: ignore[attr-defined]
        params = {
            "dateStart": since.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "dateEnd": (until - timedelta(milliseconds=1)).strftime("%Y-%m-%dT%H:%M:%S.999Z"),
            "size": str(PAGE),
            "enableScroll": "true",
        }
        query = params
        while True:
            requests += 1
            async with session.get(url, params=query, headers=headers) as resp:
                page = json.loads(await resp.read())
            if not page.get("events"):
                return requests
            query = {**params, "scrollId": page["scrollId"]}


async def _workload(name: str, days: int, per_day: int) -> list[Row]:
    from asyncwifi.testing import Simulator

    since, until = START, START + timedelta(days=days)
    total = days * per_day
    sim = Simulator(events=total, events_start=since, events_end=until, rate_limit_mode="off")
    async with sim:
        events = len(sim.data.event_ids(since, until - timedelta(milliseconds=1)))
        pages = math.ceil(events / PAGE)
        ours, estimated = await _asyncwifi(sim, since, until, total / days)
        theirs = await _hand(sim, since, until)
    floor_ours, floor_hand = pages + CONCURRENCY, pages + 1
    return [
        Row(name, "asyncwifi", ours, floor_ours, ours / floor_ours, estimated),
        Row(name, "hand-written", theirs, floor_hand, theirs / floor_hand),
    ]


def rows(scale: float = 1.0) -> list[Row]:
    """Run every workload (event volumes times ``scale``) and return the rows."""

    async def run() -> list[Row]:
        out: list[Row] = []
        for name, days, per_day in WORKLOADS:
            out += await _workload(name, days, max(1, round(per_day * scale)))
        return out

    return asyncio.run(run())


def print_rows(table: list[Row]) -> None:
    print(f"{'workload':<32} {'client':<13} {'requests':>9} {'floor':>6} {'ratio':>6}  estimate")
    print("-" * 80)
    for r in table:
        est = ""
        if r.estimated is not None:
            est = f"{r.estimated} ({r.estimated / r.requests - 1:+.0%} of spent)"
        print(
            f"{r.workload:<32} {r.client:<13} {r.requests:>9} {r.floor:>6} {r.ratio:>5.2f}x  {est}"
        )
    worst = max(r.ratio for r in table if r.client == "asyncwifi")
    print(f"asyncwifi's worst ratio to the floor: {worst:.2f}x (target <= 1.15x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="event volumes times this")
    args = parser.parse_args()
    print_rows(rows(args.scale))


if __name__ == "__main__":
    main()
