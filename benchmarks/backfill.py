"""Backfill benchmark: the ``asyncwifi events backfill`` command against a hand-written loop.

Both pull the same events from one simulator running in its own process with the rate
limit lifted (``rate_limit_mode="off"``), and write JSON Lines:

* **asyncwifi events backfill**: the command a user runs (``asyncwifi.cli.main``, what the
  ``asyncwifi`` entry point runs), with its credentials and base URL from the environment
  (``ASYNCWIFI_*``), its default options (the range cut into ``--concurrency`` 4 even
  slices, pages of 10,000, every page fsync'ed and committed to the state file
  ``OUT.state``), its progress on stderr (plain lines; ``--tty`` puts a pseudo-terminal
  there: the live display), and nothing else changed but the client's own limit, lifted as
  the simulator's is (the documented 60 a minute would make a 1,000,000-event run wait on
  the quota; ``--client-limit`` keeps it);
* **hand-written loop**: one scroll with aiohttp, ``json.loads`` of each page and
  ``json.dumps`` of each record, one write per record (the way a user would write it;
  not resumable, no fsync).

Every run is its own subprocess: events per second are over its wall time, from start to
exit (interpreter and imports included: what the user waits), and its peak RSS comes from
``os.wait4`` (the child's own ``ru_maxrss``). Each size (``--small``, 100,000 by default,
and ``--events``, 1,000,000) has its own simulator: memory must not grow with the total.

``--before REF`` also runs the command from a temporary ``git worktree`` of REF (removed
at the end) in the same run, against the same simulator: one table, before / after / loop.
The command child imports nothing of the engine: only its command line is relied on.
Prints events per second (median of ``--repeat`` interleaved runs, 2 by default), peak RSS
and the ratios. Run: ``python benchmarks/backfill.py --before main`` (a few minutes);
``--events 100000 --repeat 1`` for a quick one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import Checkout, checkouts, load_line, median, run_child, run_command

EVENTS_PER_DAY = 100_000
START = datetime(2026, 1, 1, tzinfo=UTC)
LOOP = "hand-written loop"


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


# -- the hand-written loop, run in a child process ---------------------------------------------


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


def child(info_json: str, since: str, until: str, out: str) -> None:
    info = json.loads(info_json)
    start, end = datetime.fromisoformat(since), datetime.fromisoformat(until)
    began = time.perf_counter()
    records = asyncio.run(run_loop(info, start, end, Path(out)))
    # the transfer alone (after the imports), for the record; the table uses the wall time
    print(json.dumps({"records": records, "transfer_seconds": time.perf_counter() - began}))


# -- the parent: one simulator per size, children measured one by one ---------------------------


def _range(events: int) -> tuple[datetime, datetime]:
    return START, START + timedelta(days=events / EVENTS_PER_DAY)


def _check_output(who: str, out: Path, events: int) -> None:
    with out.open("rb") as fh:
        lines = sum(1 for _ in fh)
    for path in out.parent.glob(out.name + "*"):
        path.unlink()
    if lines != events:
        raise SystemExit(f"{who}: wrote {lines:,} lines, expected {events:,}")


def measure_loop(info: dict[str, Any], events: int, workdir: Path) -> dict[str, Any]:
    since, until = _range(events)
    out = workdir / f"loop-{time.monotonic_ns()}.jsonl"
    began = time.perf_counter()
    result = run_child(
        [__file__, "--child", json.dumps(info), since.isoformat(), until.isoformat(), str(out)]
    )
    result["seconds"] = time.perf_counter() - began
    _check_output(LOOP, out, events)
    return result


def measure_command(
    checkout: Checkout, info: dict[str, Any], events: int, workdir: Path, args: argparse.Namespace
) -> dict[str, Any]:
    since, until = _range(events)
    out = workdir / f"command-{time.monotonic_ns()}.jsonl"
    argv = ["events", "backfill", "--since", _iso(since), "--until", _iso(until)]
    argv += ["--out", str(out), "--concurrency", str(args.concurrency)]
    result = run_command(checkout, argv, info, workdir, lift=not args.client_limit, tty=args.tty)
    if result["status"] != 0:
        tail = "\n".join(result["stderr"].splitlines()[-15:])
        raise SystemExit(f"{checkout.label}: exit status {result['status']}\n{tail}")
    _check_output(checkout.label, out, events)
    result["records"] = events
    return result


@contextlib.contextmanager
def simulator(events: int) -> Iterator[dict[str, Any]]:
    """A simulator in its own process holding exactly ``events`` events, limit off."""
    from asyncwifi.testing import SimulatorProcess

    since, until = _range(events)
    print(
        f"simulator: {events:,} events over {(until - since).total_seconds() / 86_400:g} days "
        "in a separate process (rate limit off), warming...",
        flush=True,
    )
    with SimulatorProcess(
        events=events,
        events_start=since.isoformat(),
        events_end=until.isoformat(),
        contacts=1_000,
        rate_limit_mode="off",
        warm=True,
        startup_timeout=300,
    ) as sim:
        yield {k: sim.info[k] for k in ("base_url", "client_key", "client_secret", "organization")}


def run_size(
    events: int, trees: list[Checkout], workdir: Path, args: argparse.Namespace
) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {LOOP: [], **{c.label: [] for c in trees}}
    with simulator(events) as info:
        for i in range(args.repeat):
            # interleaved, and the order turned each time: no side always runs first
            order: list[Checkout | None] = [None, *trees]
            for tree in order if i % 2 == 0 else order[::-1]:
                if tree is None:
                    runs[LOOP].append(measure_loop(info, events, workdir))
                else:
                    runs[tree.label].append(measure_command(tree, info, events, workdir, args))
                label = LOOP if tree is None else tree.label
                last = runs[label][-1]
                print(
                    f"  {label}: {events / last['seconds']:,.0f} events/s, "
                    f"{last['peak_rss_mb']:.1f} MB",
                    flush=True,
                )
    return runs


def rate(rs: list[dict[str, Any]]) -> float:
    return median([r["records"] / r["seconds"] for r in rs])


def rss(rs: list[dict[str, Any]]) -> float:
    return median([r["peak_rss_mb"] for r in rs])


def report(
    sizes: dict[int, dict[str, list[dict[str, Any]]]], trees: list[Checkout], big: int
) -> None:
    labels = [LOOP, *(f"asyncwifi events backfill, {t.label}" for t in trees)]
    keys = [LOOP, *(t.label for t in trees)]
    width = max(len(x) for x in labels) + 2
    print()
    print(f"{'':{width}} {'events':>10} {'events/s':>10} {'wall s':>8} {'peak RSS':>11}")
    for events, runs in sizes.items():
        for label, key in zip(labels, keys, strict=True):
            print(
                f"{label:{width}} {events:>10,} {rate(runs[key]):>10,.0f} "
                f"{median([r['seconds'] for r in runs[key]]):>8.2f} {rss(runs[key]):>8.1f} MB"
            )
    print()
    runs = sizes[big]
    loop_rate, loop_rss = rate(runs[LOOP]), rss(runs[LOOP])
    small = [n for n in sizes if n != big]
    for tree in trees:
        mine = runs[tree.label]
        line = (
            f"{tree.label}: speed {rate(mine) / loop_rate:.2f}x the loop (target >= 2x); "
            f"peak RSS {rss(mine):.1f} MB = loop {rss(mine) - loop_rss:+.1f} MB (target <= +40)"
        )
        if small:
            grow = rss(mine) - rss(sizes[small[0]][tree.label])
            line += f"; {small[0]:,} -> {big:,}: {grow:+.1f} MB (target within 15)"
        print(line)
    if len(trees) == 2:
        after, before = (runs[t.label] for t in trees)
        print(
            f"after / before: speed {rate(after) / rate(before):.2f}x, "
            f"peak RSS {rss(after) - rss(before):+.1f} MB at {big:,} events"
        )
    if small:
        grow = loop_rss - rss(sizes[small[0]][LOOP])
        print(f"{LOOP}: {small[0]:,} -> {big:,}: {grow:+.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the big run")
    parser.add_argument(
        "--small", type=int, default=100_000, help="events in the small run (0: none)"
    )
    parser.add_argument("--repeat", type=int, default=2, help="runs of each (median)")
    parser.add_argument("--before", metavar="REF", help="also run the command from this git commit")
    parser.add_argument("--concurrency", type=int, default=4, help="the command's --concurrency")
    parser.add_argument(
        "--tty", action="store_true", help="the command's stderr on a pseudo-terminal"
    )
    parser.add_argument(
        "--client-limit",
        action="store_true",
        help="keep the command's client limit (60 a minute): measures the quota",
    )
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return

    print(load_line())
    plan = sorted({n for n in (args.small, args.events) if n > 0})
    sizes: dict[int, dict[str, list[dict[str, Any]]]] = {}
    with (
        checkouts(args.before) as trees,
        tempfile.TemporaryDirectory(prefix="asyncwifi-bench-", dir=".") as tmp,
    ):
        print("command from: " + "; ".join(f"{t.label} {t.root}" for t in trees), flush=True)
        for events in plan:
            sizes[events] = run_size(events, trees, Path(tmp).resolve(), args)
    report(sizes, trees, args.events)


if __name__ == "__main__":
    main()
