"""Scroll benchmark: streaming events with asyncwifi against a hand-written aiohttp + json loop.

One simulator runs in its own process with the gateway's limit lifted
(``rate_limit_mode="off"``) and every event encoded before serving (``warm=True``, so the
server's encoding is not what is measured); the client's limit is lifted too. Each consumer
runs in its own child process, so that its peak RSS (``ru_maxrss`` from ``os.wait4``) is its
own:

* **asyncwifi**: ``api.events.list(size=10_000)``, iterating the typed ``Event`` models;
* **asyncwifi raw**: the same stream with ``keep_raw=True`` through ``.pages()``, iterating
  each event's exact bytes (the lossless export path);
* **hand-written loop**: one ``aiohttp.ClientSession``, one login, ``enableScroll=true``,
  ``size=10000``, ``scrollId`` continuation, ``json.loads`` of each page, iterating the events;
* **transfer only** (a reference, not a contender): the same requests with the bodies read
  and not decoded (the scroll id found with a regex): the ceiling that the simulator and
  aiohttp leave to any consumer on this machine.

Every consumer reads each event's id. Prints events/s (median of ``--repeat`` interleaved runs,
3 by default) and the median peak RSS over the whole total (1,000,000 events) and over
10,000 events (a date range of the same simulator), with the ratios. ``--shape`` picks the
records' shape (nested by default; ``dated`` is the legacy flat + ``date`` of earlier runs).
Targets: asyncwifi at least 3x the hand-written loop's events/s; its peak RSS within 50 MB
between 10,000 and the total. Run: ``python benchmarks/scroll.py`` (about 90 s);
``--quick`` for 200,000 events.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from _common import hand_login, load_line, median, open_client, run_child, simulator

from asyncwifi import StreamOptions

KINDS = ("asyncwifi", "asyncwifi raw", "hand-written", "transfer only")
START = datetime(2026, 1, 1, tzinfo=UTC)
EVENTS_PER_DAY = 100_000
SMALL = 10_000


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _range(events: int) -> tuple[str, str]:
    """The date range holding about ``events`` events (dateEnd is inclusive: minus 1 ms)."""
    end = START + timedelta(days=events / EVENTS_PER_DAY)
    return _iso(START), _iso(end - timedelta(milliseconds=1))


# -- the consumers, each run in a child process --------------------------------------------


async def consume_typed(info: dict[str, Any], since: str, until: str) -> int:
    n = 0
    async with open_client(info) as api:
        async for event in api.events.list(date_start=since, date_end=until, size=10_000):
            if event.id:
                n += 1
    return n


async def consume_raw(info: dict[str, Any], since: str, until: str) -> int:
    n = 0
    async with open_client(info) as api:
        stream = api.events.list(
            date_start=since, date_end=until, size=10_000, options=StreamOptions(keep_raw=True)
        )
        async for page in stream.pages():
            assert page.raw_items is not None
            for event, raw in zip(page.items, page.raw_items, strict=True):
                if event.id and raw:
                    n += 1
    return n


async def consume_hand(info: dict[str, Any], since: str, until: str) -> int:
    """What a user would write by hand: one scroll, ``json.loads`` of each page."""
    import aiohttp

    n = 0
    async with aiohttp.ClientSession() as session:
        headers = await hand_login(session, info)
        url = f"{info['base_url']}/v1/organizations/{info['organization']}/events"
        params = {
            "dateStart": since,
            "dateEnd": until,
            "size": "10000",
            "sortBy": "utcTime",
            "enableScroll": "true",
        }
        query = params
        while True:
            async with session.get(url, params=query, headers=headers) as resp:
                resp.raise_for_status()
                page = json.loads(await resp.read())
            events = page.get("events") or []
            if not events:
                break
            for event in events:
                # the id is top level (flat records) or under "event" (the nested shape)
                if (event.get("event") or event)["id"]:
                    n += 1
            query = {**params, "scrollId": page["scrollId"]}
    return n


async def consume_transfer(info: dict[str, Any], since: str, until: str) -> int:
    """The ceiling: the same requests, bodies read but not decoded (no consumer is faster)."""
    import aiohttp

    n = 0
    async with aiohttp.ClientSession() as session:
        headers = await hand_login(session, info)
        url = f"{info['base_url']}/v1/organizations/{info['organization']}/events"
        params = {
            "dateStart": since,
            "dateEnd": until,
            "size": "10000",
            "sortBy": "utcTime",
            "enableScroll": "true",
        }
        query = params
        while True:
            async with session.get(url, params=query, headers=headers) as resp:
                resp.raise_for_status()
                body = await resp.read()
            found = SCROLL_ID.search(body, max(0, body.rfind(b'"scrollId"')))
            count = body.count(b'"id":')  # events' ids: counted, not decoded
            if not count or found is None:
                break
            n += count
            query = {**params, "scrollId": found.group(1).decode()}
    return n


SCROLL_ID = re.compile(rb'"scrollId"\s*:\s*"([^"]+)"')
CONSUMERS = {
    "asyncwifi": consume_typed,
    "asyncwifi raw": consume_raw,
    "hand-written": consume_hand,
    "transfer only": consume_transfer,
}


def child(kind: str, info_json: str, since: str, until: str) -> None:
    # imports happen before the clock starts: every side is timed on the stream alone
    import aiohttp  # noqa: F401

    import asyncwifi  # noqa: F401

    info = json.loads(info_json)
    began, cpu = time.perf_counter(), time.process_time()
    records = asyncio.run(CONSUMERS[kind](info, since, until))
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    print(json.dumps({"records": records, "seconds": seconds, "cpu": cpu}))


# -- the parent: one simulator, consumers measured one by one ------------------------------


def measure(kind: str, info: dict[str, Any], events: int) -> dict[str, Any]:
    since, until = _range(events)
    return run_child([__file__, "--child", kind, json.dumps(info), since, until])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the big runs")
    parser.add_argument("--quick", action="store_true", help="200,000 events")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each consumer (median)")
    parser.add_argument(
        "--shape",
        choices=("nested", "flat", "dated"),
        default="nested",
        help="the simulator's event record shape (default nested, as the API's example)",
    )
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    total = 200_000 if args.quick else args.events
    print(load_line())
    days = total / EVENTS_PER_DAY
    print(
        f"simulator: {total:,} {args.shape} events over {days:g} days in a separate process "
        "(rate limit off, warm), starting...",
        flush=True,
    )
    big: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    small: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    with simulator(
        events=total,
        events_start=START.isoformat(),
        events_end=(START + timedelta(days=days)).isoformat(),
        warm=True,
        event_shape=args.shape,
    ) as info:
        for r in range(args.repeat):
            order = KINDS[r % len(KINDS) :] + KINDS[: r % len(KINDS)]
            for kind in order:
                big[kind].append(measure(kind, info, total))
                print(f"  {kind:<14} {big[kind][-1]['records']:>9,} events", flush=True)
            for kind in order:
                small[kind].append(measure(kind, info, SMALL))
    report(big, small, total)
    print(load_line())


def report(
    big: dict[str, list[dict[str, Any]]], small: dict[str, list[dict[str, Any]]], total: int
) -> None:
    def rate(rs: list[dict[str, Any]]) -> float:
        return median([r["records"] / r["seconds"] for r in rs])

    def cpu_us(rs: list[dict[str, Any]]) -> float:
        return median([r["cpu"] / r["records"] * 1e6 for r in rs])

    def rss(rs: list[dict[str, Any]]) -> float:
        return median([r["peak_rss_mb"] for r in rs])

    for kind in KINDS:
        counts = {r["records"] for r in big[kind]}
        if counts != {total}:
            raise SystemExit(f"{kind} streamed {counts} events, expected {total:,}")
    n_small = small["hand-written"][0]["records"]
    hand = rate(big["hand-written"])
    print(f"\nmedians of {len(big['asyncwifi'])} runs, each consumer in its own process")
    head = (
        f"{'consumer':<16} {'events/s':>11} {'vs hand':>8} {'CPU us/event':>13} "
        f"{'peak RSS ' + format(n_small, ','):>17} {'peak RSS ' + format(total, ','):>19} "
        f"{'growth':>9}"
    )
    print(head)
    print("-" * len(head))
    for kind in KINDS:
        grow = rss(big[kind]) - rss(small[kind])
        print(
            f"{kind:<16} {rate(big[kind]):>11,.0f} {rate(big[kind]) / hand:>7.2f}x "
            f"{cpu_us(big[kind]):>13.2f} "
            f"{rss(small[kind]):>14.1f} MB {rss(big[kind]):>16.1f} MB {grow:>+6.1f} MB"
        )
    speed = rate(big["asyncwifi"]) / hand
    grow = rss(big["asyncwifi"]) - rss(small["asyncwifi"])
    raw_grow = rss(big["asyncwifi raw"]) - rss(small["asyncwifi raw"])
    print(
        f"\nspeed: asyncwifi / hand-written = {speed:.2f}x (target >= 3x): "
        f"{'met' if speed >= 3 else 'MISSED'}"
    )
    ceiling = rate(big["transfer only"]) / hand
    print(
        f"ceiling: reading the bodies without decoding them is {ceiling:.2f}x the hand-written "
        f"loop here; asyncwifi reaches {rate(big['asyncwifi']) / rate(big['transfer only']):.0%}"
        f" of it (raw: {rate(big['asyncwifi raw']) / rate(big['transfer only']):.0%})"
    )
    print(
        f"memory: asyncwifi grows {grow:+.1f} MB (raw {raw_grow:+.1f} MB) from {n_small:,} "
        f"to {total:,} events (target within 50 MB): "
        f"{'met' if max(grow, raw_grow) <= 50 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
