"""Client benchmark: requests/s through the whole Client against a hand-written aiohttp loop.

Both sides call one simulator running in its own process with the gateway's limit lifted
(``rate_limit_mode="off"``; the client's limit is lifted too, ``Limits(minute=None,
day=None)``), in the same process, one after the other in interleaved rounds:

* **asyncwifi**: ``api.hotspots.get(id)`` and ``api.segments.list()``: scheduler, token
  manager, the retry loop, hooks, logging, msgspec decode into typed models;
* **hand-written loop**: one ``aiohttp.ClientSession``, one login, a Bearer header,
  ``raise_for_status()`` and ``json.loads`` of the body (what a user would write by hand).

Each cell runs the same number of requests from 1, 16 and 64 concurrent coroutines. Both
sides may hold 64 requests in flight (the client's ``Limits(max_in_flight=64)``, aiohttp's
default pool of 100 connections, as the hand-written session has). Prints requests/s,
microseconds per request (wall, and this process's CPU, which excludes the server), and the
ratio client/hand-written (target: at most 1.5x). Medians of ``--rounds`` rounds (5).

Run: ``python benchmarks/client.py`` (about 40 s); ``--quick`` for a smoke run;
``--profile`` to print where the client's time goes (cProfile, 64 coroutines);
``--pipeline`` for the pipeline's own CPU per call, with and without a retry (no server).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from _common import hand_login, load_line, median, open_client, simulator

from asyncwifi import Limits

CONCURRENCY = (1, 16, 64)
CALLS = ("hotspots.get", "segments.list")
SIDES = ("asyncwifi", "hand-written")

Op = Callable[[int], Awaitable[object]]


async def drive(op: Op, requests: int, concurrency: int) -> tuple[float, float]:
    """Run ``op(i)`` for i in range(requests) from ``concurrency`` coroutines.

    Returns (wall seconds, this process's CPU seconds).
    """
    counter = iter(range(requests))

    async def worker() -> None:
        for i in counter:
            await op(i)

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - wall, time.process_time() - cpu


def client_ops(api: Any, ids: list[str]) -> dict[str, Op]:
    async def get(i: int) -> object:
        hotspot = await api.hotspots.get(ids[i % len(ids)])
        assert hotspot.id
        return hotspot

    async def segments(i: int) -> object:
        listed = await api.segments.list()
        assert listed
        return listed

    return {"hotspots.get": get, "segments.list": segments}


def hand_ops(
    session: aiohttp.ClientSession, headers: dict[str, str], info: dict[str, Any], ids: list[str]
) -> dict[str, Op]:
    base = info["base_url"]
    segments_url = f"{base}/v2/segments/organizations/{info['organization']}"

    async def get(i: int) -> object:
        async with session.get(f"{base}/v3/hotspots/{ids[i % len(ids)]}", headers=headers) as r:
            r.raise_for_status()
            hotspot = json.loads(await r.read())["hotspot"]
        assert hotspot["id"]
        return hotspot

    async def segments(i: int) -> object:
        async with session.get(segments_url, headers=headers) as r:
            r.raise_for_status()
            listed = json.loads(await r.read())["segments"]
        assert listed
        return listed

    return {"hotspots.get": get, "segments.list": segments}


async def bench(info: dict[str, Any], rounds: int, requests: int, profile: bool) -> None:
    # samples[(call, concurrency, side)] = [(wall, cpu), ...]
    samples: dict[tuple[str, int, str], list[tuple[float, float]]] = {}
    async with (
        open_client(
            info, limits=Limits(minute=None, day=None, max_in_flight=64, max_connections=100)
        ) as api,
        aiohttp.ClientSession() as session,
    ):
        ids = [h.id for h in await api.hotspots.list()]
        headers = await hand_login(session, info)
        ops = {
            "asyncwifi": client_ops(api, ids),
            "hand-written": hand_ops(session, headers, info, ids),
        }
        for side in SIDES:  # warm up: connections, decoders, the token
            for call in CALLS:
                await drive(ops[side][call], 64, 16)
        cells = [(call, c) for call in CALLS for c in CONCURRENCY]
        for r in range(rounds):
            for call, conc in cells:
                order = SIDES if (r + conc) % 2 == 0 else SIDES[::-1]
                for side in order:
                    result = await drive(ops[side][call], requests, conc)
                    samples.setdefault((call, conc, side), []).append(result)
        report(samples, requests, rounds)
        if profile:
            await profile_client(ops["asyncwifi"], requests)
            await components(api, info, ids)


def report(
    samples: dict[tuple[str, int, str], list[tuple[float, float]]], requests: int, rounds: int
) -> None:
    print(
        f"\n{requests} requests per cell, median of {rounds} rounds; us = microseconds/request; "
        "overhead = asyncwifi - hand-written (wall)"
    )
    head = (
        f"{'call':<14} {'conc':>4} {'asyncwifi req/s':>16} {'hand req/s':>11} "
        f"{'wall us':>15} {'overhead':>9} {'ratio':>6} {'CPU us (client proc)':>21} {'ratio':>6}"
    )
    print(head)
    print("-" * len(head))
    worst = 0.0
    for call in CALLS:
        for conc in CONCURRENCY:
            a = samples[(call, conc, "asyncwifi")]
            h = samples[(call, conc, "hand-written")]
            a_wall, h_wall = median([w for w, _ in a]), median([w for w, _ in h])
            a_cpu, h_cpu = median([c for _, c in a]), median([c for _, c in h])
            ratio = a_wall / h_wall
            worst = max(worst, ratio)
            us = 1e6 / requests
            print(
                f"{call:<14} {conc:>4} {requests / a_wall:>16,.0f} {requests / h_wall:>11,.0f} "
                f"{a_wall * us:>6.0f} vs {h_wall * us:>5.0f} {(a_wall - h_wall) * us:>+6.0f} us "
                f"{ratio:>5.2f}x "
                f"{a_cpu * us:>10.0f} vs {h_cpu * us:>5.0f} {a_cpu / h_cpu:>5.2f}x"
            )
    print(
        f"\noverhead ratio (client wall time / hand-written): worst {worst:.2f}x "
        f"(target <= 1.5x): {'met' if worst <= 1.5 else 'MISSED'}"
    )


async def profile_client(ops: dict[str, Op], requests: int) -> None:
    """Where the client's own CPU goes at 64 coroutines (cProfile, both calls)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for call in CALLS:
        await drive(ops[call], requests, 64)
    profiler.disable()
    stats = pstats.Stats(profiler)
    total = sum(row[2] for row in stats.stats.values())  # type: ignore[attr-defined]
    groups: dict[str, float] = {}
    for (filename, _, func), row in stats.stats.items():  # type: ignore[attr-defined]
        groups[component(filename, func)] = groups.get(component(filename, func), 0.0) + row[2]
    print(f"\n--- cProfile of the client, 64 coroutines: own time by component ({total:.3f} s)")
    for name, seconds in sorted(groups.items(), key=lambda kv: -kv[1])[:14]:
        print(f"{name:<44} {seconds / total:>6.1%}")
    buf = io.StringIO()
    stats.stream = buf  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(20)
    stats.sort_stats("cumulative").print_stats(r"asyncwifi", 25)
    print(buf.getvalue())


def component(filename: str, func: str) -> str:
    """A profile row's owner: an asyncwifi module, a library, or a kind of builtin."""
    if "/asyncwifi/" in filename:
        return "asyncwifi/" + filename.split("/asyncwifi/", 1)[1]
    if "site-packages/" in filename:
        return filename.split("site-packages/", 1)[1].split("/", 1)[0]
    if filename == "~":
        return "builtin " + ("socket I/O" if "socket" in func else "other")
    if "/lib/python3" in filename:
        return "stdlib " + filename.rsplit("/lib/python3", 1)[1].split("/", 1)[1]
    return filename.rsplit("/", 1)[-1]


async def components(api: Any, info: dict[str, Any], ids: list[str]) -> None:
    """Microseconds per call of the client's per-request steps, measured without a profiler."""
    import logging

    # what the first attempt would cost if it ran inside tenacity (see _core.py: it does not)
    from tenacity import AsyncRetrying, retry_if_exception

    from asyncwifi.models import decode
    from asyncwifi.models._hotspots import HotspotEnvelope
    from asyncwifi.ratelimit import RateLimitHeaders

    async with aiohttp.ClientSession() as session:
        headers = await hand_login(session, info)
        async with session.get(f"{info['base_url']}/v3/hotspots/{ids[0]}", headers=headers) as r:
            body, resp_headers = await r.read(), r.headers
    n = 5_000

    async def noop() -> int:
        return 1

    async def retrying() -> None:
        for _ in range(n):
            await AsyncRetrying(
                retry=retry_if_exception(lambda e: False),
                stop=lambda s: True,
                wait=lambda s: 0.0,
                sleep=asyncio.sleep,
                before_sleep=lambda s: None,
                reraise=True,
            )(noop)

    async def slots() -> None:
        for _ in range(n):
            async with api.scheduler.slot(objects="hotspots") as permit:
                permit.observe(200, resp_headers)

    async def slots_bare() -> None:
        for _ in range(n):
            async with api.scheduler.slot(objects="hotspots"):
                pass

    async def tokens() -> None:
        for _ in range(n):
            await api._tokens.get()

    def timed_sync(fn: Callable[[], object]) -> float:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - start) / n * 1e6

    async def timed(fn: Callable[[], Awaitable[None]]) -> float:
        start = time.perf_counter()
        await fn()
        return (time.perf_counter() - start) / n * 1e6

    log = logging.getLogger("asyncwifi.http")
    rows = [
        ("tenacity AsyncRetrying(...)(coro), no retry", await timed(retrying)),
        ("scheduler.slot() + permit.observe(headers)", await timed(slots)),
        ("scheduler.slot() alone", await timed(slots_bare)),
        (
            "RateLimitHeaders.from_headers(response)",
            timed_sync(lambda: RateLimitHeaders.from_headers(resp_headers)),
        ),
        ("token manager get() (cached)", await timed(tokens)),
        ("decode(body, HotspotEnvelope)", timed_sync(lambda: decode(body, HotspotEnvelope))),
        ("json.loads(body) (hand-written)", timed_sync(lambda: json.loads(body))),
        ("log.debug (disabled)", timed_sync(lambda: log.debug("%s %s", 1, 2))),
    ]
    print("--- the client's per-request steps, no profiler (us per call) ---")
    for name, us in rows:
        print(f"{name:<44} {us:>7.1f}")
    await layers(api, info, ids)


async def layers(api: Any, info: dict[str, Any], ids: list[str]) -> None:
    """This process's CPU per request, one layer of the client added at a time (1 coroutine).

    The server's CPU is not in these figures: the differences are the client's own cost.
    """
    from asyncwifi._transport import Request
    from asyncwifi.models import decode
    from asyncwifi.models._hotspots import HotspotEnvelope

    path = f"/v3/hotspots/{ids[0]}"
    token = (await api._tokens.get()).bearer
    async with aiohttp.ClientSession() as session:
        headers = await hand_login(session, info)
        url = info["base_url"] + path

        async def hand(i: int) -> object:
            async with session.get(url, headers=headers) as r:
                r.raise_for_status()
                return json.loads(await r.read())

        async def transport(i: int) -> object:
            return await api._transport.send(
                Request("GET", path, None, None, {"Authorization": token})
            )

        async def pipeline(i: int) -> object:
            return await api._api.read(
                "GET",
                path,
                tag="hotspots",
                objects="hotspots",
                decode=lambda b: decode(b, HotspotEnvelope),
            )

        async def resource(i: int) -> object:
            return await api.hotspots.get(ids[0])

        cases = [
            ("hand-written session.get + json.loads", hand),
            ("AiohttpTransport.send (no decode)", transport),
            ("RequestPipeline.read: + scheduler, retry loop, token, decode", pipeline),
            ("api.hotspots.get: + path checks, envelope", resource),
        ]
        cpu: dict[str, list[float]] = {name: [] for name, _ in cases}
        for r in range(9):
            for name, op in cases[r % 4 :] + cases[: r % 4]:
                cpu[name].append((await drive(op, 400, 1))[1] / 400 * 1e6)
    print("--- CPU of this process per request, layer by layer (1 coroutine, median of 9) ---")
    for name, _ in cases:
        print(f"{name:<48} {median(cpu[name]):>7.0f} us")


async def pipeline_cpu(rounds: int) -> None:
    """CPU per call of the pipeline alone (MockTransport: no network, no server), on a call
    that succeeds and on one that meets a 503 and then succeeds (one retry, no backoff)."""
    import base64
    import logging

    from asyncwifi import Client, Limits, MockTransport, RetryPolicy
    from asyncwifi._transport import Request, Response

    def b64(value: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    login = json.dumps({"token": f"{b64({'alg': 'HS256'})}.{b64({'exp': 4e9})}.sig"}).encode()
    body = json.dumps({"segments": [{"id": f"s{i}", "name": "x"} for i in range(3)]}).encode()
    limit_headers = {"X-RateLimit-Remaining-Minute": "59", "RateLimit-Reset": "30"}
    logging.disable(logging.WARNING)  # the retry's warning is not what is measured
    print("--- CPU per call of the pipeline, MockTransport (median of rounds) ---")
    for failing in (False, True):
        sent = [0]

        def handler(request: Request, failing: bool = failing, sent: list[int] = sent) -> Response:
            if "login" in request.path:
                return Response(200, {}, login)
            sent[0] += 1
            if failing and sent[0] % 2:
                return Response(503, {}, b"")
            return Response(200, limit_headers, body)

        async with Client(
            "key",
            "secret",
            base_url="https://bench.invalid",
            organization="org",
            transport=MockTransport(handler),
            limits=Limits(minute=None, day=None),
            retry=RetryPolicy(backoff_base=0.0),
        ) as api:
            for _ in range(300):
                await api.segments.list()
            samples = []
            for _ in range(rounds):
                cpu = time.process_time()
                for _ in range(2_000):
                    await api.segments.list()
                samples.append((time.process_time() - cpu) / 2_000 * 1e6)
        name = "a 503, then a 200 (one retry)" if failing else "a 200"
        print(f"segments.list, {name:<32} {median(samples):>7.1f} us")
    logging.disable(logging.NOTSET)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (median)")
    parser.add_argument("--requests", type=int, default=600, help="requests per cell")
    parser.add_argument("--profile", action="store_true", help="cProfile the client after")
    parser.add_argument(
        "--pipeline", action="store_true", help="only the pipeline's CPU per call (no server)"
    )
    args = parser.parse_args()
    if args.pipeline:
        asyncio.run(pipeline_cpu(7))
        return
    rounds, requests = (2, 200) if args.quick else (args.rounds, args.requests)
    print(load_line())
    print("simulator in a separate process, gateway and client limits lifted", flush=True)
    with simulator(hotspots=64, segments=6) as info:
        asyncio.run(bench(info, rounds, requests, args.profile))
    print(load_line())


if __name__ == "__main__":
    main()
