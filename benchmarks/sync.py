"""Sync benchmark: the ``asyncwifi sync --once`` command against a hand-written loop, rows per
second into SQLite and PostgreSQL, side by side in one run.

Every contender reads the same events from one simulator running in its own process (its
default "nested" shape, pages of 10,000, rate limit lifted: this compares loading, not
quota) into a fresh database each:

* **asyncwifi sync**: the command a user runs (``asyncwifi.cli.main``, what the
  ``asyncwifi`` entry point runs): ``asyncwifi sync --to URL --once --since .. --until ..``
  with its credentials and base URL from the environment (``ASYNCWIFI_*``) and its other
  options at their defaults: its own schema and migrations, contacts, hotspots and
  segments too, every batch written with its checkpoint in one transaction (resumable,
  exactly once, typed columns + the raw record); only the client's own limit is lifted, as
  the simulator's is (the documented 60 a minute; ``--client-limit`` keeps it);
* **hand-written**: ``api.events.list(...).records()`` with the client's limit lifted, and
  ``executemany`` of an ``INSERT .. ON CONFLICT DO NOTHING`` per 10,000 rows into the same
  columns as the sync's ``events`` table (asyncpg for PostgreSQL, ``sqlite3`` for SQLite;
  no checkpoint, events only).

Every run is its own subprocess: rows per second are event rows (counted in the database
afterwards) over its wall time, from start to exit (what the user waits); its peak RSS
comes from ``os.wait4`` (the child's own ``ru_maxrss``). Each size (``--small``, 100,000 by
default, and ``--events``, 1,000,000) has its own simulator: memory must not grow with the
total. ``--before REF`` also runs the command from a temporary ``git worktree`` of REF
(removed at the end), in the same run, against the same simulator and a fresh database.

PostgreSQL: 127.0.0.1:5432, trust auth as ``postgres``; each run gets its own database,
created and dropped here, after a ``CHECKPOINT`` (else a run pays the previous one's dirty
pages). ``--stores sqlite`` without it. Run: ``python benchmarks/sync.py --before main``
(several minutes); ``--events 100000`` for a quick one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from asyncwifi import StreamOptions

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import Checkout, checkouts, load_line, median, run_child, run_command

ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
START = datetime(2024, 1, 1, tzinfo=UTC)
END = datetime(2024, 1, 31, tzinfo=UTC)
HAND = "hand-written executemany"
STORES = ("sqlite", "postgresql")

# the sync's events table (asyncwifi.sync's schema, written out: the hand-written side must
# not depend on the engine it is compared with)
COLUMNS = ("id", "type", "time", "customer_id", "location_id", "hotspot_id", "raw", "synced_at")
DDL = {
    "postgresql": (
        "CREATE TABLE events (id text PRIMARY KEY, type text, time timestamptz, "
        "customer_id text, location_id text, hotspot_id text, raw jsonb NOT NULL, "
        "synced_at timestamptz NOT NULL)",
        "CREATE INDEX events_time ON events (time)",
    ),
    "sqlite": (
        "CREATE TABLE events (id TEXT PRIMARY KEY, type TEXT, time TEXT, customer_id TEXT, "
        "location_id TEXT, hotspot_id TEXT, raw TEXT NOT NULL, synced_at TEXT NOT NULL)",
        "CREATE INDEX events_time ON events (time)",
    ),
}


# -- the hand-written loop, run in a child process ---------------------------------------------


async def run_handwritten(info: dict[str, Any], url: str) -> int:
    from asyncwifi import Client, Limits

    postgres = url.startswith("postgresql://")
    if postgres:
        import asyncpg

        conn = await asyncpg.connect(url)
        for sql in DDL["postgresql"]:
            await conn.execute(sql)
        marks = ", ".join(f"${i + 1}" for i in range(len(COLUMNS)))
    else:
        db = sqlite3.connect(url.removeprefix("sqlite:///"))
        for sql in DDL["sqlite"]:
            db.execute(sql)
        marks = ", ".join("?" for _ in COLUMNS)
    insert = (
        f"INSERT INTO events ({', '.join(COLUMNS)}) VALUES ({marks}) ON CONFLICT (id) DO NOTHING"
    )

    async def flush(batch: list[tuple[Any, ...]]) -> None:
        if postgres:
            await conn.executemany(insert, batch)
        else:
            db.executemany(insert, batch)
            db.commit()

    rows = 0
    batch: list[tuple[Any, ...]] = []
    api = Client(
        info["client_key"],
        info["client_secret"],
        base_url=info["base_url"],
        organization=info["organization"],
        allow_http=True,
        limits=Limits(minute=None, day=None),  # the limit is lifted on both sides
    )
    async with api:
        stream = api.events.list(
            date_start=START, date_end=END, options=StreamOptions(keep_raw=True)
        )
        async for record in stream.records():
            ev = record.item
            where = ev.where
            when, now = ev.time, datetime.now(UTC)
            batch.append(
                (
                    ev.id,
                    ev.type,
                    when if postgres or when is None else when.isoformat(),
                    ev.customer_id,
                    where.location_id if where else None,
                    where.hotspot_id if where else None,
                    bytes(record.raw or b"").decode(),
                    now if postgres else now.isoformat(),
                )
            )
            if len(batch) >= 10_000:
                await flush(batch)
                rows += len(batch)
                batch = []
    if batch:
        await flush(batch)
        rows += len(batch)
    if postgres:
        await conn.close()
    else:
        db.close()
    return rows


def child(info_json: str, url: str) -> None:
    rows = asyncio.run(run_handwritten(json.loads(info_json), url))
    print(json.dumps({"rows": rows}))


# -- the databases ------------------------------------------------------------------------------


async def _admin(sql: str) -> Any:
    import asyncpg

    conn = await asyncpg.connect(ADMIN)
    try:
        return await conn.fetchval(sql)
    finally:
        await conn.close()


async def _count_pg(url: str) -> int:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM events"))
    finally:
        await conn.close()


@contextlib.contextmanager
def fresh_database(store: str, workdir: Path) -> Iterator[tuple[str, Any]]:
    """A new empty database: ``(url, count of its events table)``; dropped on exit."""
    if store == "sqlite":
        path = workdir / f"sync-{uuid.uuid4().hex[:10]}.db"

        def count_sqlite() -> int:
            with contextlib.closing(sqlite3.connect(path)) as db:
                return int(db.execute("SELECT count(*) FROM events").fetchone()[0])

        try:
            yield f"sqlite:///{path}", count_sqlite
        finally:
            for leftover in workdir.glob(path.name + "*"):
                leftover.unlink()
        return
    name = f"asyncwifi_bench_{uuid.uuid4().hex[:10]}"
    url = f"postgresql://postgres@127.0.0.1:5432/{name}"
    # each run starts on a quiet server: the previous run's database dropped and its dirty
    # pages flushed (else this run pays the previous one's checkpoint)
    asyncio.run(_admin("CHECKPOINT"))
    asyncio.run(_admin(f"CREATE DATABASE {name}"))
    try:
        yield url, lambda: asyncio.run(_count_pg(url))
    finally:
        asyncio.run(_admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))


def check_postgres() -> None:
    try:
        asyncio.run(_admin("SELECT 1"))
    except Exception as exc:
        raise SystemExit(
            f"PostgreSQL at {ADMIN}: {exc} (start it, or pass --stores sqlite)"
        ) from None


# -- the parent: one simulator per size, children measured one by one ---------------------------


def measure(
    tree: Checkout | None,
    store: str,
    info: dict[str, Any],
    events: int,
    workdir: Path,
    args: argparse.Namespace,
) -> dict[str, Any]:
    label = HAND if tree is None else tree.label
    with fresh_database(store, workdir) as (url, count):
        began = time.perf_counter()
        if tree is None:
            result = run_child([__file__, "--child", json.dumps(info), url])
        else:
            argv = ["sync", "--to", url, "--once"]
            argv += ["--since", START.isoformat(), "--until", END.isoformat()]
            result = run_command(tree, argv, info, workdir, lift=not args.client_limit)
            if result["status"] != 0:
                tail = "\n".join(result["stderr"].splitlines()[-15:])
                raise SystemExit(f"{label} into {store}: exit status {result['status']}\n{tail}")
        seconds = time.perf_counter() - began
        rows = count()
    if rows != events:
        raise SystemExit(f"{label} into {store}: {rows:,} event rows, expected {events:,}")
    return {"rows": rows, "seconds": seconds, "peak_rss_mb": result["peak_rss_mb"]}


def run_size(
    events: int, stores: list[str], trees: list[Checkout], workdir: Path, args: argparse.Namespace
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    from asyncwifi.testing import SimulatorProcess

    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    print(
        f"simulator: {events:,} events in a separate process (rate limit off), warming...",
        flush=True,
    )
    with SimulatorProcess(
        events=events,
        events_start=START.isoformat(),
        events_end=END.isoformat(),
        rate_limit_mode="off",
        warm=True,
        startup_timeout=300,
    ) as sim:
        info = {k: sim.info[k] for k in ("base_url", "client_key", "client_secret", "organization")}
        for store in stores:
            for i in range(args.repeat):
                # interleaved, and the order turned each time: no side always runs first
                order: list[Checkout | None] = [None, *trees]
                for tree in order if i % 2 == 0 else order[::-1]:
                    label = HAND if tree is None else tree.label
                    result = measure(tree, store, info, events, workdir, args)
                    runs.setdefault((store, label), []).append(result)
                    print(
                        f"  {store}, {label}: {events / result['seconds']:,.0f} rows/s, "
                        f"{result['peak_rss_mb']:.1f} MB",
                        flush=True,
                    )
    return runs


def rate(rs: list[dict[str, Any]]) -> float:
    return median([r["rows"] / r["seconds"] for r in rs])


def rss(rs: list[dict[str, Any]]) -> float:
    return median([r["peak_rss_mb"] for r in rs])


def report(
    sizes: dict[int, dict[tuple[str, str], list[dict[str, Any]]]],
    stores: list[str],
    trees: list[Checkout],
    big: int,
) -> None:
    keys = [HAND, *(t.label for t in trees)]
    names = {HAND: HAND, **{t.label: f"asyncwifi sync --once, {t.label}" for t in trees}}
    width = max(len(x) for x in names.values()) + 2
    print()
    print(f"{'':{width}} {'store':>10} {'events':>10} {'rows/s':>9} {'wall s':>8} {'peak RSS':>11}")
    for store in stores:
        for events, runs in sizes.items():
            for key in keys:
                rs = runs[(store, key)]
                print(
                    f"{names[key]:{width}} {store:>10} {events:>10,} {rate(rs):>9,.0f} "
                    f"{median([r['seconds'] for r in rs]):>8.2f} {rss(rs):>8.1f} MB"
                )
    print()
    small = [n for n in sizes if n != big]
    for store in stores:
        runs = sizes[big]
        hand = runs[(store, HAND)]
        for tree in trees:
            mine = runs[(store, tree.label)]
            line = (
                f"{store}, {tree.label}: {rate(mine) / rate(hand):.2f}x the hand-written rows/s"
                f"{' (target >= 3x)' if store == 'postgresql' else ''}; "
                f"peak RSS {rss(mine):.1f} MB = hand {rss(mine) - rss(hand):+.1f}"
            )
            if small:
                grow = rss(mine) - rss(sizes[small[0]][(store, tree.label)])
                line += f"; {small[0]:,} -> {big:,}: {grow:+.1f} MB"
            print(line)
        if len(trees) == 2:
            after, before = (runs[(store, t.label)] for t in trees)
            print(
                f"{store}, after / before: {rate(after) / rate(before):.2f}x the rows/s, "
                f"peak RSS {rss(after) - rss(before):+.1f} MB at {big:,} events"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the big run")
    parser.add_argument(
        "--small", type=int, default=100_000, help="events in the small run (0: none)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs of each (median)")
    parser.add_argument(
        "--stores", default=",".join(STORES), help="sqlite, postgresql or both (comma-separated)"
    )
    parser.add_argument("--before", metavar="REF", help="also run the command from this git commit")
    parser.add_argument(
        "--client-limit",
        action="store_true",
        help="keep the command's client limit (60 a minute): measures the quota",
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    if not stores or any(s not in STORES for s in stores):
        parser.error(f"--stores: {', '.join(STORES)} (comma-separated)")
    if "postgresql" in stores:
        check_postgres()

    print(load_line())
    plan = sorted({n for n in (args.small, args.events) if n > 0})
    sizes: dict[int, dict[tuple[str, str], list[dict[str, Any]]]] = {}
    with (
        checkouts(args.before) as trees,
        tempfile.TemporaryDirectory(prefix="asyncwifi-bench-", dir=".") as tmp,
    ):
        print("command from: " + "; ".join(f"{t.label} {t.root}" for t in trees), flush=True)
        for events in plan:
            sizes[events] = run_size(events, stores, trees, Path(tmp).resolve(), args)
    report(sizes, stores, trees, args.events)


if __name__ == "__main__":
    main()
