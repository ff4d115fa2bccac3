"""The sync under failure: kill -9 at protocol points (after a commit, inside a transaction)
and restart, on two record shapes (no row lost, none written twice: counted by a trigger);
PostgreSQL restarted mid-run (the sync waits, retries and finishes)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from asyncwifi.engine import open_destination
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.testing._data import DEFAULT_EVENTS_START
from tests.sync._killed_sync import simulator
from tests.sync.conftest import (
    pg_database,
    pg_lock,
    require_postgres,
    sim_client,
    skip_unless_required,
)

#: where each killed process dies, counting its own event transactions: after a commit,
#: inside a transaction (rows written, not committed), after a commit again (each run
#: resumes from what the one before committed). Then one run to the end
KILLS = ("commit:2", "rows:2", "commit:3")
AUDIT = "test_events_audit"
#: where the local PostgreSQL clusters are (Debian's layout), for the restart test
PG_CLUSTERS = "/etc/postgresql"


async def execute(url: str, *statements: str) -> list[tuple[Any, ...]]:
    """Run statements on the destination with its own driver; the last one's rows."""
    found: list[tuple[Any, ...]] = []
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url[len("sqlite:///") :]) as conn:
            for statement in statements:
                found = [tuple(r) for r in conn.execute(statement)]
        return found
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        for statement in statements:
            found = [tuple(r) for r in await conn.fetch(statement)]
    finally:
        await conn.close()
    return found


async def audit_event_inserts(url: str) -> None:
    """Every row inserted into ``events`` (each attempt, a conflicting one included) also
    lands in an audit table, in the same transaction: a committed second write of an id
    shows there, where the primary key makes it a silent no-op in ``events``."""
    if url.startswith("sqlite:///"):
        await execute(
            url,
            f"CREATE TABLE {AUDIT} (id TEXT NOT NULL)",
            f"CREATE TRIGGER {AUDIT} BEFORE INSERT ON events "
            f"BEGIN INSERT INTO {AUDIT} VALUES (NEW.id); END",
        )
        return
    await execute(
        url,
        f"CREATE TABLE {AUDIT} (id text NOT NULL)",
        f"CREATE FUNCTION {AUDIT}() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN INSERT INTO {AUDIT} VALUES (NEW.id); RETURN NEW; END $$",
        f"CREATE TRIGGER {AUDIT} BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION {AUDIT}()",
    )


def run_sync(url: str, shape: str, *fault: str) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "tests.sync._killed_sync", url, shape, *fault]
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    return subprocess.run(command, env=env, capture_output=True, timeout=60)


@pytest.mark.parametrize("shape", ["nested", "flat"])
async def test_kill_9_at_protocol_points_then_finish(
    db_url: str, shape: str, tmp_path: Path
) -> None:
    store = open_destination(db_url)
    await store.open()  # the sync's tables, then the audit trigger on them
    await store.close()
    await audit_event_inserts(db_url)
    note = tmp_path / "killed.json"
    for fault in KILLS:
        before = {r[0] for r in await execute(db_url, "SELECT id FROM events")}
        done = await asyncio.to_thread(run_sync, db_url, shape, fault, str(note))
        assert done.returncode == -signal.SIGKILL, done.stderr.decode()
        killed = json.loads(note.read_text())
        note.unlink()
        ids = set(killed["ids"])
        assert ids, "killed at a transaction that held rows"
        again = len(ids & before)
        assert not again, f"{fault}: {again} rows committed by an earlier run, written again"
        held = {r[0] for r in await execute(db_url, "SELECT id FROM events")}
        if killed["point"] == "commit":
            assert held >= ids, fault  # committed: there for good
        else:
            assert held.isdisjoint(ids), fault  # killed before its commit: none of it
    final = await asyncio.to_thread(run_sync, db_url, shape)
    assert final.returncode == 0, final.stderr.decode()

    sim = simulator(shape)
    expected = set(sim.data.event_ids())
    assert {r[0] for r in await execute(db_url, "SELECT id FROM events")} == expected
    # each id written exactly once across the killed runs and the last one
    writes = Counter(r[0] for r in await execute(db_url, f"SELECT id FROM {AUDIT}"))
    twice = sorted(ident for ident, n in writes.items() if n > 1)
    assert not twice, f"{len(twice)} events written more than once, e.g. {twice[:3]}"
    assert set(writes) == expected
    contacts = {r[0] for r in await execute(db_url, "SELECT id FROM contacts")}
    assert contacts == {c["cid"] for c in sim.data.contacts}


@pytest.mark.postgres
async def test_postgres_restarted_mid_run_the_sync_waits_and_finishes() -> None:
    require_postgres()
    # the machine's own way: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql)
    # main restart. Where it cannot be done the test skips, or fails when PostgreSQL is
    # required (ASYNCWIFI_REQUIRE_POSTGRES=1): a required test never passes by skipping
    clusters = sorted(os.listdir(PG_CLUSTERS)) if os.path.isdir(PG_CLUSTERS) else []
    if not clusters or shutil.which("pg_ctlcluster") is None:
        skip_unless_required(f"no local PostgreSQL cluster to restart ({PG_CLUSTERS})")
    restart = ["pg_ctlcluster", "--skip-systemctl-redirect", clusters[0], "main", "restart"]
    with pg_lock(exclusive=True):
        async with pg_database() as url, sim_client(events=20_000, contacts=100) as (sim, api):
            store = open_destination(url)
            since = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
            options = SyncOptions(since=since, until=None, page_size=500, retry_initial=0.2)
            options.until = datetime.fromtimestamp(DEFAULT_EVENTS_START + 30 * 86_400, UTC)
            writes: list[int] = []
            restarted = asyncio.Event()

            def on_write(table: str, rows: int) -> None:
                writes.append(rows)
                if len(writes) == 3:
                    restarted.set()

            syncer = Syncer(api, store, options=options, on_write=on_write)
            run = asyncio.create_task(syncer.run_once())
            waiting = asyncio.ensure_future(restarted.wait())
            await asyncio.wait({run, waiting}, return_when=asyncio.FIRST_COMPLETED)
            if not restarted.is_set():  # never wait forever for a sync that ended
                waiting.cancel()
                run.result()
                pytest.fail("the sync ended before its third write")
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
