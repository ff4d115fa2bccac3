"""Sync benchmark: rows per second into PostgreSQL, asyncwifi's sync against a hand-written
asyncpg ``executemany`` loop, side by side in one run.

Both read the same events from one in-process simulator (its default "nested" shape,
``size`` 10,000, rate limit lifted: this compares loading, not quota) into a fresh
database each:

* **asyncwifi**: ``Syncer.sync_events`` into ``PostgresStore``: per batch, binary COPY
  (on ``--writers`` connections, commits in order), the checkpoint in the same transaction
  (resumable, exactly once, typed columns + jsonb ``raw``);
* **hand-written**: ``api.events.list(...).records()`` and ``executemany`` of an
  ``INSERT .. ON CONFLICT DO NOTHING`` per 10,000 rows (same columns; no checkpoint).

Prints rows per second, the ratio, and the process RSS after 100,000 rows and at the end
(both runs share the process and the simulator's cached pages: compare the growth).
``--unlogged`` makes ``events`` an UNLOGGED table in both runs: on a small server (default
``max_wal_size`` 1 GB) a million jsonb rows force checkpoints that stall any writer for a
minute, whoever it is; unlogged, the figures compare the loading itself.
Run: ``python benchmarks/sync.py`` (1,000,000 events, about 2 minutes);
``--events 200000`` for a quick one. Needs PostgreSQL on 127.0.0.1:5432 (trust auth).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from asyncwifi import Client, Limit, Limits, ScaledClock
from asyncwifi.sync import Syncer, SyncOptions, open_store
from asyncwifi.sync._schema import TABLES
from asyncwifi.testing import Simulator

ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
START = datetime(2024, 1, 1, tzinfo=UTC)
END = datetime(2024, 1, 31, tzinfo=UTC)


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * 4096 / 2**20


async def admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(ADMIN)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def fresh_db() -> tuple[str, str]:
    name = f"asyncwifi_bench_{uuid.uuid4().hex[:10]}"
    await admin(f"CREATE DATABASE {name}")
    return name, f"postgresql://postgres@127.0.0.1:5432/{name}"


UNLOGGED = False
WRITERS = 2


async def prepare(url: str) -> None:
    """The schema (the sync's migrations), events UNLOGGED with ``--unlogged``."""
    store = open_store(url)
    await store.open()
    await store.close()
    if UNLOGGED:
        import asyncpg

        conn = await asyncpg.connect(url)
        await conn.execute("ALTER TABLE events SET UNLOGGED")
        await conn.close()


async def run_sync(api: Client, url: str, marks: dict[str, float]) -> float:
    await prepare(url)
    store = open_store(url, writers=WRITERS)
    rows = 0

    def on_write(table: str, written: int) -> None:
        nonlocal rows
        rows += written
        if rows >= 100_000 and "100k" not in marks:
            marks["100k"] = rss_mb()

    syncer = Syncer(api, store, options=SyncOptions(since=START, until=END), on_write=on_write)
    await store.open()
    t0 = time.perf_counter()
    await syncer.sync_events()
    elapsed = time.perf_counter() - t0
    marks["end"] = rss_mb()
    assert await store.count("events") == rows, "every event stored once"
    await store.close()
    return rows / elapsed


async def run_handwritten(api: Client, url: str, marks: dict[str, float]) -> float:
    import asyncpg

    await prepare(url)  # the same schema
    conn = await asyncpg.connect(url)
    names = TABLES["events"].names
    sql = (
        f"INSERT INTO events ({', '.join(names)}) VALUES "
        f"({', '.join(f'${i + 1}' for i in range(len(names)))}) ON CONFLICT (id) DO NOTHING"
    )
    rows = 0
    batch: list[Any] = []
    t0 = time.perf_counter()
    stream = api.events.list(date_start=START, date_end=END, keep_raw=True)
    async for record in stream.records():
        ev = record.item
        where = ev.where
        batch.append(
            (
                ev.id,
                ev.type,
                ev.time,
                ev.customer_id,
                where.location_id if where else None,
                where.hotspot_id if where else None,
                bytes(record.raw or b"").decode(),
                datetime.now(UTC),
            )
        )
        if len(batch) >= 10_000:
            await conn.executemany(sql, batch)
            rows += len(batch)
            batch = []
            if rows >= 100_000 and "100k" not in marks:
                marks["100k"] = rss_mb()
    if batch:
        await conn.executemany(sql, batch)
        rows += len(batch)
    elapsed = time.perf_counter() - t0
    marks["end"] = rss_mb()
    await conn.close()
    return rows / elapsed


async def main(events: int) -> None:
    clock = ScaledClock(1.0)  # real time: a 60 s scroll window never lapses here
    sim = Simulator(clock=clock, events=events, events_start=START, events_end=END,
                    rate_limit_mode="off", minute_limit=1_000_000, day_limit=10**9)  # fmt: skip
    await asyncio.to_thread(sim.data.events.warm)
    print(f"{events:,} events; process RSS after warming the simulator: {rss_mb():.0f} MB")
    created: list[str] = []
    results: dict[str, tuple[float, dict[str, float]]] = {}
    await sim.start()
    # the quota lifted on both sides (the gateway's, whose headers the client obeys, and
    # the client's own): a million events are 100+ pages; this compares loading, not quota
    limits = Limits(minute=Limit(1_000_000, 60.0), day=Limit(10**9, 86_400.0))
    client = Client(sim.client_key, sim.client_secret, base_url=sim.base_url, limits=limits,
                    organization=sim.organization, allow_http=True, clock=clock)  # fmt: skip
    runs = (("hand-written executemany", run_handwritten),
            ("asyncwifi sync (COPY + upsert)", run_sync))  # fmt: skip
    try:
        async with client as api:
            for label, run in runs:
                # each run starts on a quiet server: the previous run's database dropped and
                # its dirty pages flushed (else the second run pays the first one's checkpoint)
                for name in created:
                    await admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
                created.clear()
                await admin("CHECKPOINT")
                name, url = await fresh_db()
                created.append(name)
                marks: dict[str, float] = {"start": rss_mb()}
                rate = await run(api, url, marks)
                results[label] = (rate, marks)
                print(
                    f"{label:32} {rate:10,.0f} rows/s   RSS start {marks['start']:.0f} MB, "
                    f"at 100k {marks.get('100k', 0):.0f} MB, "
                    f"at {events:,} {marks['end']:.0f} MB"
                )
    finally:
        await sim.stop()
        for name in created:
            await admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    base = results["hand-written executemany"][0]
    ours = results["asyncwifi sync (COPY + upsert)"][0]
    print(f"ratio: asyncwifi sync / hand-written = {ours / base:.2f}x (target >= 3x)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--unlogged", action="store_true", help="events as an UNLOGGED table")
    parser.add_argument("--writers", type=int, default=2, help="PostgresStore(writers=N)")
    args = parser.parse_args()
    UNLOGGED = args.unlogged
    WRITERS = args.writers
    asyncio.run(main(args.events))
