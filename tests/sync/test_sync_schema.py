"""The sync's schema: one list of steps both destinations run; a SQLite file of the scheme
before ``user_version`` (a ``schema_migrations`` table) carried over in place, every row
kept; a database of a newer release refused and left untouched (SQLite and PostgreSQL)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from asyncwifi.engine import Write, open_destination
from asyncwifi.engine._schema import STEPS, TABLES
from asyncwifi.errors import SchemaVersionError
from tests.sync.conftest import pg_database, pg_lock, require_postgres

#: the DDL the sync wrote before ``user_version`` (frozen here: it must not follow the code)
OLD_DDL = [
    "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
    "CREATE TABLE events (id TEXT PRIMARY KEY, type TEXT, time TEXT, customer_id TEXT, "
    "location_id TEXT, hotspot_id TEXT, raw TEXT NOT NULL, synced_at TEXT NOT NULL)",
    "CREATE TABLE contacts (id TEXT PRIMARY KEY, email TEXT, phone TEXT, first_name TEXT, "
    "last_name TEXT, created TEXT, modified TEXT, raw TEXT NOT NULL, synced_at TEXT NOT NULL, "
    "deleted_at TEXT)",
    "CREATE TABLE hotspots (id TEXT PRIMARY KEY, name TEXT, venue_id TEXT, mac_address TEXT, "
    "hotspot_identifier TEXT, enabled INTEGER, raw TEXT NOT NULL, synced_at TEXT NOT NULL, "
    "deleted_at TEXT)",
    "CREATE TABLE segments (id TEXT PRIMARY KEY, name TEXT, segment_status TEXT, "
    "audience INTEGER, modified TEXT, raw TEXT NOT NULL, synced_at TEXT NOT NULL, "
    "deleted_at TEXT)",
    "CREATE INDEX events_time ON events (time)",
    "CREATE INDEX contacts_modified ON contacts (modified)",
    "CREATE TABLE sync_checkpoints (name TEXT PRIMARY KEY, value TEXT NOT NULL, "
    "updated_at TEXT NOT NULL)",
    "CREATE TABLE sync_dead_letters (id INTEGER PRIMARY KEY, resource TEXT NOT NULL, "
    "record_id TEXT, digest TEXT NOT NULL, error TEXT NOT NULL, raw BLOB NOT NULL, "
    "first_seen TEXT NOT NULL, UNIQUE (resource, digest))",
]
T = "2024-01-01T00:00:00.000000Z"
EVENT = ("e1", "visit", T, "c", "L", "H", "{}", T)
OLD_ROWS = [
    ("INSERT INTO schema_migrations VALUES (?, ?)", (1, T)),
    ("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)", EVENT),
    (
        "INSERT INTO contacts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ("c1", "a@b", None, "A", "B", T, T, '{"cid":"c1"}', T, T),
    ),
    ("INSERT INTO sync_checkpoints VALUES (?, ?, ?)", ("events", "cursor-1", T)),
    (
        "INSERT INTO sync_dead_letters VALUES (?, ?, ?, ?, ?, ?, ?)",
        (1, "events", None, "d", "bad", b"\xff", T),
    ),
]
DATA_TABLES = [*TABLES, "sync_checkpoints", "sync_dead_letters"]


def _sqlite(path: Path, *statements: str | tuple[str, tuple[object, ...]]) -> None:
    with sqlite3.connect(path) as conn:
        for statement in statements:
            conn.execute(*((statement,) if isinstance(statement, str) else statement))


def _dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    with sqlite3.connect(path) as conn:
        return {t: sorted(conn.execute(f"SELECT * FROM {t}")) for t in DATA_TABLES}


def _user_version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


async def test_a_sqlite_file_of_the_migrations_table_scheme_is_carried_over(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    _sqlite(path, *OLD_DDL, *OLD_ROWS)
    before = _dump(path)
    store = open_destination(f"sqlite:///{path}", organization="org-1")
    await store.open()
    try:
        assert await store.schema_version() == len(STEPS)
        assert await store.checkpoint("events") == "cursor-1"
        # the tables take writes as before: a replay (the same row, the same cursor) is none
        replay = Write("events", [EVENT], checkpoints={"events": "cursor-1"})
        assert await store.write(replay) == 0
    finally:
        await store.close()
    # every row kept, now the organization's (version 2)
    assert _dump(path) == {t: [(*r, "org-1") for r in rows] for t, rows in before.items()}
    assert _user_version(path) == len(STEPS)
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "schema_migrations" not in tables  # user_version says it now


async def test_a_sqlite_file_whose_old_migration_never_ran_gets_its_tables(
    tmp_path: Path,
) -> None:
    # the old code created schema_migrations, then died before its version 1 committed
    path = tmp_path / "half.db"
    _sqlite(path, OLD_DDL[0])
    store = open_destination(f"sqlite:///{path}")
    await store.open()
    try:
        assert await store.schema_version() == len(STEPS)
        assert await store.count("events") == 0
    finally:
        await store.close()


async def test_a_sqlite_file_of_a_newer_release_is_refused_untouched(tmp_path: Path) -> None:
    # not in WAL mode yet: a store that switched it before reading the version would show
    path = tmp_path / "new.db"
    newer = len(STEPS) + 1
    _sqlite(path, *OLD_DDL[1:], f"PRAGMA user_version = {newer}")
    before = path.read_bytes()
    with pytest.raises(SchemaVersionError, match=f"schema version {newer}.*upgrade asyncwifi"):
        await open_destination(f"sqlite:///{path}").open()
    assert path.read_bytes() == before
    assert _user_version(path) == newer


async def _pg(url: str, sql: str, *args: object) -> list[tuple[Any, ...]]:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        return [tuple(r) for r in await conn.fetch(sql, *args)]
    finally:
        await conn.close()


@pytest.mark.postgres
async def test_a_postgres_database_of_a_newer_release_is_refused_untouched() -> None:
    require_postgres()
    with pg_lock(exclusive=False):
        async with pg_database() as url:
            store = open_destination(url)
            await store.open()
            await store.close()
            newer = len(STEPS) + 1
            await _pg(url, "INSERT INTO schema_migrations VALUES ($1, now())", newer)
            tables = "SELECT table_name FROM information_schema.tables ORDER BY 1"
            before = (await _pg(url, tables), await _pg(url, "TABLE schema_migrations"))
            store = open_destination(url)
            with pytest.raises(SchemaVersionError, match=f"schema version {newer}"):
                await store.open()
            await store.close()
            assert (await _pg(url, tables), await _pg(url, "TABLE schema_migrations")) == before


async def test_both_destinations_run_the_same_steps(db_url: str) -> None:
    store = open_destination(db_url)
    await store.open()
    try:
        assert await store.schema_version() == len(STEPS)
    finally:
        await store.close()
    for name, table in TABLES.items():
        if db_url.startswith("sqlite:///"):
            with sqlite3.connect(db_url[len("sqlite:///") :]) as conn:
                columns = [r[1] for r in conn.execute(f"PRAGMA table_info({name})")]
        else:
            sql = (
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = $1 ORDER BY ordinal_position"
            )
            columns = [r[0] for r in await _pg(db_url, sql, name)]
        deleted = ["deleted_at"] if table.deletes else []
        assert columns == [*table.names, *deleted, "organization_id"]
