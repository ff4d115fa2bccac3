"""A child process for the multi-process tests: one scheduler on a shared RedisStore key.

Run as ``python -m tests.ratelimit.rl_worker '<json config>'``; prints one JSON line with
the admission times (and, against the simulator, the response statuses), or, with
``"objects": n`` in the config, counts n events objects one by one (all at once) and prints
the month's events count the store answered last, or, with ``"streams": n``, reads n event
streams at once through a client of the simulator under ``"month"``'s allowance (raising at
it) and prints the events each delivered and how each ended.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import replace
from typing import Any

from asyncwifi.ratelimit import Limit, Limits, RedisStore, Scheduler

# the parent's scaled time line, read through the system-wide monotonic clock: the clock a
# simulator in a child process shares with its parent (real time: the processes are real)
from asyncwifi.testing._process import AnchoredClock


async def plain(cfg: dict[str, Any], sched: Scheduler) -> dict[str, Any]:
    sent: list[float] = []

    async def one() -> None:
        async with sched.slot() as p:
            sent.append(p.sent_at)

    await asyncio.gather(*(one() for _ in range(cfg["count"])))
    return {"sent": sent}


async def simulator(cfg: dict[str, Any], sched: Scheduler) -> dict[str, Any]:
    import aiohttp

    sent: list[float] = []
    statuses: list[int] = []
    base = cfg["base_url"]
    async with aiohttp.ClientSession() as http:
        async with sched.slot() as p:
            sent.append(p.sent_at)
            async with http.post(
                f"{base}/v1/sts/login/services",
                json={"clientKey": cfg["client_key"], "clientSecret": cfg["client_secret"]},
                headers={"Accept": "application/json"},
            ) as r:
                statuses.append(r.status)
                p.observe(r.status, r.headers)
                token = (await r.json())["token"]

        async def one() -> None:
            async with sched.slot() as p:
                sent.append(p.sent_at)
                async with http.get(
                    f"{base}/v2/segments/organizations/{cfg['organization']}",
                    headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
                ) as r:
                    await r.read()
                    statuses.append(r.status)
                    p.observe(r.status, r.headers)

        await asyncio.gather(*(one() for _ in range(cfg["count"])))
    return {"sent": sent, "statuses": statuses}


async def objects(cfg: dict[str, Any], store: RedisStore) -> dict[str, Any]:
    counts = await asyncio.gather(
        *(store.add_objects(cfg["now"], "events", 1) for _ in range(cfg["objects"]))
    )
    last = await store.object_counts(cfg["now"])
    await store.aclose()
    return {"events": max([c.used("events") for c in counts] + [last.used("events")])}


async def streams(cfg: dict[str, Any], store: RedisStore, clock: AnchoredClock) -> dict[str, Any]:
    from asyncwifi import Client
    from asyncwifi.errors import QuotaExhaustedError

    limits = Limits(month=cfg["month"], on_exhausted="raise")
    api = Client(
        cfg["client_key"], cfg["client_secret"], base_url=cfg["base_url"], allow_http=True,
        organization=cfg["organization"], clock=clock, limits=limits, rate_store=store,
    )  # fmt: skip

    async def read(i: int) -> tuple[int, str]:
        got = 0
        try:
            async for _ in api.events.list(date_start=cfg["ranges"][i][0],
                                           date_end=cfg["ranges"][i][1]):  # fmt: skip
                got += 1
        except QuotaExhaustedError as exc:
            return got, exc.limit
        return got, "end"

    async with api:
        ends = await asyncio.gather(*(read(i) for i in range(cfg["streams"])))
        counted = await api.scheduler.objects("events")
    return {"delivered": [n for n, _ in ends], "ends": [e for _, e in ends], "counted": counted}


async def main(cfg: dict[str, Any]) -> None:
    store = RedisStore(cfg["url"], key=cfg["key"], prefix=cfg["prefix"], use_redis_time=False)
    if cfg.get("objects"):
        print(json.dumps(await objects(cfg, store)), flush=True)
        return
    clock = AnchoredClock(cfg["speed"], cfg["start"], cfg["anchor"])
    if cfg.get("streams"):
        print(json.dumps(await streams(cfg, store, clock)), flush=True)
        return
    limits = Limits(
        minute=Limit(cfg["n"], 60.0), day=Limit(15_000, 86_400.0), minute_margin=cfg["margin"]
    )
    async with Scheduler(replace(limits, max_in_flight=None), clock=clock, store=store) as sched:
        run = simulator if cfg.get("base_url") else plain
        out = await run(cfg, sched)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
