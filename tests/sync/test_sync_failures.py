"""The sync under failure: kill -9 at random moments and restart (no row lost or doubled);
PostgreSQL restarted mid-run (the sync waits, retries and finishes)."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from asyncwifi._clock import ScaledClock
from asyncwifi.cli._app import SimOptions
from asyncwifi.cli._simulate import build_simulator
from asyncwifi.sync import Syncer, SyncOptions, open_store
from asyncwifi.testing._data import DEFAULT_EVENTS_START
from tests.sync.conftest import pg_database, pg_lock, require_postgres, sim_client

SINCE, UNTIL = "2026-01-01", "2026-01-05"


def _command(url: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from asyncwifi.cli import main; main()",
        "--simulate",
        "--sim-speed",
        "300",
        "--sim-seed",
        "11",
        "sync",
        "--to",
        url,
        "--since",
        SINCE,
        "--until",
        UNTIL,
        "--once",
        "--quiet",
    ]


async def test_kill_9_at_random_moments_then_finish(db_url: str) -> None:
    rnd = random.Random(5)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    kills = 0
    # a pass may finish before its kill on an idle machine: try until three kills landed
    for _ in range(8):
        proc = subprocess.Popen(_command(db_url), env=env, stderr=subprocess.DEVNULL)
        await asyncio.sleep(rnd.uniform(0.6, 1.6))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(timeout=30)
        if kills == 3:
            break
    final = subprocess.run(_command(db_url), env=env, capture_output=True, timeout=120)
    assert final.returncode == 0, final.stderr.decode()
    assert kills >= 1
    options = SimOptions(seed=11)
    since = datetime.fromisoformat(SINCE).replace(tzinfo=UTC)
    until = datetime.fromisoformat(UNTIL).replace(tzinfo=UTC)
    sim = build_simulator(options, since=since, until=until, clock=ScaledClock(1.0))
    expected = set(sim.data.event_ids())
    store = open_store(db_url)
    await store.open()
    try:
        assert await store.ids("events") == expected
        assert await store.count("events") == len(expected)  # nothing doubled
        assert await store.ids("contacts") == {c["cid"] for c in sim.data.contacts}
        assert await store.count("contacts") == len(sim.data.contacts)
    finally:
        await store.close()


@pytest.mark.postgres
async def test_postgres_restarted_mid_run_the_sync_waits_and_finishes() -> None:
    require_postgres()
    clusters = os.listdir("/etc/postgresql") if os.path.isdir("/etc/postgresql") else []
    if not clusters:
        pytest.skip("no local PostgreSQL cluster to restart (/etc/postgresql)")
    restart = ["pg_ctlcluster", "--skip-systemctl-redirect", clusters[0], "main", "restart"]
    with pg_lock(exclusive=True):
        async with pg_database() as url, sim_client(events=20_000, contacts=100) as (sim, api):
            store = open_store(url)
            since = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
            options = SyncOptions(since=since, until=None, size=500, retry_initial=0.2)
            options.until = datetime.fromtimestamp(DEFAULT_EVENTS_START + 30 * 86_400, UTC)
            writes: list[int] = []
            restarted = asyncio.Event()

            def on_write(table: str, rows: int) -> None:
                writes.append(rows)
                if len(writes) == 3:
                    restarted.set()

            syncer = Syncer(api, store, options=options, on_write=on_write)
            run = asyncio.create_task(syncer.run_once())
            await restarted.wait()
            done = await asyncio.to_thread(subprocess.run, restart, capture_output=True)
            assert done.returncode == 0, done.stderr.decode()
            try:
                await asyncio.wait_for(run, 120)
                assert syncer.stats.store_outages >= 1  # it did see the server go away
                assert syncer.stats.store_down_since is None
                assert await store.ids("events") == set(sim.data.event_ids())
                assert await store.count("events") == 20_000
            finally:
                await store.close()
