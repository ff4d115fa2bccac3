"""One OS process of the soak: a Client on a shared RedisStore key, three jobs at once.

Run as ``python -m tests.soak.soak_worker '<json config>'`` (the soak test does it). The
interactive loop (segments, hotspots), the contacts export and the event backfill run
concurrently on one client until the day quota is spent (``QuotaExhaustedError`` from
``Limits.max_wait``), or until ``max_jobs`` each. Writes one JSON document to
``cfg["out"]``: the ids each export delivered, whether it completed, and the client's
figures; the parent checks them against the simulator's data.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import sys
from dataclasses import replace
from typing import Any

from asyncwifi import Client, Limit, Limits, RetryPolicy
from asyncwifi._clock import Clock
from asyncwifi._transport import AiohttpTransport, Request, Response
from asyncwifi.errors import QuotaExhaustedError
from asyncwifi.ratelimit import RedisStore
from asyncwifi.testing._gateway import SENT_AT
from asyncwifi.testing._process import AnchoredClock


def event_day(worker: int, job: int) -> int:
    """The January 2024 day the ``job``-th backfill of ``worker`` exports (1..31)."""
    return (worker * 11 + job) % 31 + 1


async def interactive(api: Client, out: dict[str, Any], max_jobs: int) -> None:
    while out["interactive"] < max_jobs:
        segments = await api.segments.list()
        hotspots = await api.hotspots.list()
        assert segments
        assert hotspots
        out["interactive"] += 1


async def contacts(api: Client, out: dict[str, Any], cfg: dict[str, Any]) -> None:
    for _ in range(cfg["max_jobs"]):
        job: dict[str, Any] = {"ids": [], "complete": False}
        out["contacts"].append(job)
        async for contact in api.contacts.list(size=cfg["contacts_size"], resume=True):
            job["ids"].append(contact.cid)
        job["complete"] = True


async def events(api: Client, out: dict[str, Any], cfg: dict[str, Any]) -> None:
    for n in range(cfg["max_jobs"]):
        day = event_day(cfg["worker"], n)
        job: dict[str, Any] = {"day": day, "ids": [], "complete": False}
        out["events"].append(job)
        stream = api.events.list(
            date_start=f"2024-01-{day:02d}T00:00:00Z",
            date_end=f"2024-01-{day:02d}T23:59:59.999Z",
            size=cfg["events_size"],
        )
        async for event in stream:
            job["ids"].append(event.id)
        out["resumes"] += stream.resumes
        job["complete"] = True


class Stamped(AiohttpTransport):
    """Says when each request left (``X-Sim-Sent-At``): the simulator, in a process starved
    of CPU beside two busy loops, would read its clock up to 0.6 s (25 clock s) late and
    count a request admitted in one minute in the next; the gateway counts at arrival."""

    def __init__(self, base_url: str, clock: Clock) -> None:
        super().__init__(base_url)
        self.clock = clock

    async def send(self, request: Request) -> Response:
        stamped = {**request.headers, SENT_AT: repr(self.clock.now())}
        return await super().send(replace(request, headers=stamped))


async def guarded(name: str, job: Any, out: dict[str, Any]) -> None:
    """Run one loop; the day quota running out ends it (what the soak aims for)."""
    try:
        await job
    except QuotaExhaustedError as exc:
        out["stopped"][name] = exc.limit


async def watchdog(seconds: float) -> None:
    """Past ``seconds`` (real), print every task's stack and exit 3: a hang is diagnosable."""
    await asyncio.sleep(seconds)
    for task in asyncio.all_tasks():
        print(f"--- {task.get_name()}: {task.get_coro()!r}", file=sys.stderr)
        task.print_stack(file=sys.stderr)
    sys.stderr.flush()
    os._exit(3)


async def main(cfg: dict[str, Any]) -> None:
    dog = asyncio.create_task(watchdog(cfg["watchdog"]), name="watchdog")
    clock = AnchoredClock(cfg["speed"], cfg["start"], cfg["anchor"])
    store = RedisStore(cfg["redis_url"], key=cfg["key"], prefix=cfg["prefix"], use_redis_time=False)
    limits = Limits(
        minute=Limit(cfg["minute_limit"], 60.0),
        day=Limit(cfg["day_limit"], 86_400.0),
        minute_margin=cfg["minute_margin"],
    )
    out: dict[str, Any] = {
        "interactive": 0,
        "contacts": [],
        "events": [],
        "resumes": 0,
        "stopped": {},
    }
    async with Client(
        cfg["client_key"],
        cfg["client_secret"],
        base_url=cfg["base_url"],
        organization=cfg["organization"],
        allow_http=True,
        clock=clock,
        # a minute's wait is pacing; the day's (hours away) ends the run
        limits=replace(limits, max_wait=600.0),
        rate_store=store,
        retry=RetryPolicy(backoff_base=0.5, backoff_max=5.0),
        transport=Stamped(cfg["base_url"], clock),
    ) as api:
        await asyncio.gather(
            guarded("interactive", interactive(api, out, cfg["max_jobs"]), out),
            guarded("contacts", contacts(api, out, cfg), out),
            guarded("events", events(api, out, cfg), out),
        )
        quota = api.quota
        out["logins"] = api.logins
        out["store"] = quota.store
    dog.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await dog
    gc.collect()
    out["tasks_left"] = len(asyncio.all_tasks()) - 1
    with open(cfg["out"], "w", encoding="utf-8") as f:
        json.dump(out, f)


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
