"""A database of the scheme before organizations (version 1: today's steps, rows and
checkpoints of a real partial sync) is carried over in place on SQLite and PostgreSQL: every
row and checkpoint becomes the organization it is opened for, and a sync from it goes on
from its checkpoints writing nothing twice. Opened with no organization while it holds
rows, it is refused and left as it was; empty, it needs none."""

from __future__ import annotations

import contextlib
import sqlite3
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from asyncwifi.engine import open_destination
from asyncwifi.engine._schema import STEPS
from asyncwifi.errors import ConfigurationError
from asyncwifi.sync import Syncer, SyncOptions
from tests.sync.conftest import Crash, Recording, pg_database, sim_client
from tests.sync.test_organizations import SINCE, UNTIL
from tests.sync.test_sync_pass import rows

OWNED = ("events", "contacts", "hotspots", "segments", "sync_checkpoints", "sync_dead_letters")
OPTIONS = SyncOptions(since=SINCE, until=UNTIL, page_size=200)


def _path(url: str) -> str:
    return url[len("sqlite:///") :]


async def _execute(url: str, *statements: str) -> None:
    if url.startswith("sqlite:///"):
        with sqlite3.connect(_path(url)) as conn:
            for statement in statements:
                conn.execute(statement)
        return
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


async def make_version_1(url: str) -> None:
    """An empty database of the scheme before organizations, as today's code leaves it."""
    if url.startswith("sqlite:///"):
        await _execute(url, *STEPS[0]("sqlite", ""), "PRAGMA user_version = 1")
        return
    await _execute(
        url,
        "CREATE TABLE schema_migrations (version integer PRIMARY KEY, "
        "applied_at timestamptz NOT NULL)",
        *STEPS[0]("postgresql", ""),
        "INSERT INTO schema_migrations VALUES (1, now())",
    )


async def _columns(url: str, table: str) -> list[str]:
    if url.startswith("sqlite:///"):
        return [str(r[1]) for r in await rows(url, f"PRAGMA table_info({table})")]
    sql = (
        "SELECT column_name FROM information_schema.columns "
        f"WHERE table_name = '{table}' ORDER BY ordinal_position"
    )
    return [str(r[0]) for r in await rows(url, sql)]


async def copy_rows(source: str, target: str) -> None:
    """Every row of ``source`` (the new scheme) into ``target`` (version 1), in its columns."""
    for table in OWNED:
        cols = await _columns(target, table)
        data = await rows(source, f"SELECT {', '.join(cols)} FROM {table}")
        if target.startswith("sqlite:///"):
            with sqlite3.connect(_path(target)) as conn:
                marks = ", ".join("?" * len(cols))
                conn.executemany(f"INSERT INTO {table} VALUES ({marks})", data)
            continue
        import asyncpg

        conn = await asyncpg.connect(target)
        try:
            await conn.copy_records_to_table(table, records=data, columns=cols)
        finally:
            await conn.close()
    if not target.startswith("sqlite:///"):  # where today's dead letters' ids stand
        await _execute(
            target,
            "SELECT setval(pg_get_serial_sequence('sync_dead_letters', 'id'), "
            "coalesce(max(id), 0) + 1, false) FROM sync_dead_letters",
        )


async def dump(url: str) -> dict[str, list[tuple[Any, ...]]]:
    return {t: sorted(await rows(url, f"SELECT * FROM {t}"), key=repr) for t in OWNED}


async def version(url: str) -> int:
    if url.startswith("sqlite:///"):
        return int((await rows(url, "PRAGMA user_version"))[0][0])
    return int((await rows(url, "SELECT max(version) FROM schema_migrations"))[0][0])


@contextlib.asynccontextmanager
async def scratch(db_url: str, tmp_path: Path) -> AsyncIterator[str]:
    """Another database of the same kind (where the partial sync runs first)."""
    if db_url.startswith("sqlite:///"):
        yield f"sqlite:///{tmp_path / 'scratch.db'}"
        return
    async with pg_database() as url:
        yield url


async def test_a_database_of_before_organizations_is_carried_over_and_synced_on(
    db_url: str, tmp_path: Path
) -> None:
    async with (
        sim_client(events=2_000, contacts=60) as (sim, api),
        scratch(db_url, tmp_path) as first,
    ):
        org = sim.organization
        list(sim.data.hotspots.values())[2]["latitude"] = "north"  # a dead letter
        # a partial sync (two event batches, then killed; contacts, hotspots, segments)
        crashing = Recording(open_destination(first))
        crashing.crash_at(3)
        with pytest.raises(Crash):
            await Syncer(api, crashing, options=OPTIONS).run_once()
        await crashing.close()
        store = open_destination(first)
        syncer = Syncer(api, store, options=OPTIONS)
        await store.open()
        await syncer.sync_contacts()
        await syncer.sync_snapshot("hotspots")
        await syncer.sync_snapshot("segments")
        stored = await store.ids("events")
        await store.close()
        assert 0 < len(stored) < 2_000
        # ... in today's scheme
        await make_version_1(db_url)
        await copy_rows(first, db_url)
        before = await dump(db_url)
        assert all(before.values()), "every table holds rows"

    async with sim_client(events=2_000, contacts=60) as (sim, api):  # the same data again
        list(sim.data.hotspots.values())[2]["latitude"] = "north"
        assert sim.organization == org
        store = open_destination(db_url, organization=org)
        await store.open()
        try:
            assert await store.schema_version() == len(STEPS) == await version(db_url)
            # every row and checkpoint kept, now the organization's
            after = await dump(db_url)
            assert after == {t: sorted(((*r, org) for r in v), key=repr) for t, v in before.items()}
            assert await store.ids("events") == stored
            # the sync goes on from the checkpoints: each remaining event once, nothing twice
            recording = Recording(store)
            syncer = Syncer(api, recording, options=OPTIONS)
            await syncer.run_once()
            assert Counter(recording.events) == Counter(set(sim.data.event_ids()) - stored)
            assert await store.ids("events") == set(sim.data.event_ids())
            assert syncer.stats.rows["events"] == 2_000 - len(stored)
            for table in ("contacts", "hotspots", "segments"):
                assert syncer.stats.rows.get(table, 0) == 0, table  # unchanged: not rewritten
            for table in OWNED:
                owners = await rows(db_url, f"SELECT DISTINCT organization_id FROM {table}")
                assert owners == [(org,)], table
            assert await rows(db_url, "SELECT count(*) FROM sync_dead_letters") == [(1,)]
        finally:
            await store.close()


async def test_a_database_of_before_organizations_opened_with_none_is_refused(
    db_url: str,
) -> None:
    await make_version_1(db_url)
    await _execute(
        db_url, "INSERT INTO sync_checkpoints VALUES ('events', 'cursor-1', '2024-01-01T00:00:00Z')"
    )
    before = await dump(db_url)
    store = open_destination(db_url)
    with pytest.raises(ConfigurationError, match="organization="):
        await store.open()
    await store.close()
    assert await version(db_url) == 1
    assert await dump(db_url) == before  # untouched
    # given the organization, it is carried over
    store = open_destination(db_url, organization="org-1")
    await store.open()
    try:
        assert await store.checkpoint("events") == "cursor-1"
        assert await version(db_url) == len(STEPS)
    finally:
        await store.close()


async def test_an_empty_database_of_before_organizations_needs_no_organization(
    db_url: str,
) -> None:
    await make_version_1(db_url)
    store = open_destination(db_url)
    await store.open()
    try:
        assert await store.schema_version() == len(STEPS)
        assert store.organization == ""
    finally:
        await store.close()
