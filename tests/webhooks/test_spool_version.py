"""The spool's schema version (``PRAGMA user_version``) and the SQLite bridge under it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from asyncwifi._sqlite import SqliteThread, migrate, statements
from asyncwifi.errors import ClientStateError, ConfigurationError, SchemaVersionError
from asyncwifi.webhooks import Spool
from asyncwifi.webhooks._spool import SCHEMA_VERSION

# the spool's tables as releases before schema versions wrote them (user_version 0)
UNVERSIONED = """
CREATE TABLE events (
    id INTEGER PRIMARY KEY, nonce TEXT UNIQUE, type TEXT, body BLOB NOT NULL,
    headers BLOB NOT NULL, received_at REAL NOT NULL, state INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at REAL NOT NULL, last_error TEXT,
    settled_at REAL
);
CREATE INDEX events_pending ON events (id) WHERE state = 0;
CREATE INDEX events_settled ON events (settled_at) WHERE state != 0;
CREATE TABLE dead_letters (
    id INTEGER PRIMARY KEY, nonce TEXT, type TEXT, body BLOB NOT NULL,
    headers BLOB NOT NULL, received_at REAL NOT NULL, attempts INTEGER NOT NULL,
    last_error TEXT, failed_at REAL NOT NULL
);
INSERT INTO events (nonce, type, body, headers, received_at, next_attempt_at)
    VALUES ('n-1', 'signup', X'7B7D', X'7B7D', 10.0, 10.0);
"""


def _version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


async def test_a_new_spool_is_stamped_with_the_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "spool.sqlite3"
    async with Spool(path) as spool:
        assert await spool.counts() == {"pending": 0, "dead_letters": 0}
    assert _version(path) == SCHEMA_VERSION == 1


async def test_an_unversioned_spool_is_migrated_and_keeps_its_events(tmp_path: Path) -> None:
    path = tmp_path / "spool.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript(UNVERSIONED)
    conn.close()
    assert _version(path) == 0
    async with Spool(path) as spool:
        claimed, _ = await spool.settle_and_claim([], now=20.0, limit=10)
    assert [(e.nonce, e.type, e.body) for e in claimed] == [("n-1", "signup", b"{}")]
    assert _version(path) == 1


async def test_a_spool_from_a_newer_release_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "spool.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript(UNVERSIONED)
    conn.execute("PRAGMA user_version = 7")
    conn.close()
    for _ in range(2):  # the lock is released: the second open fails the same way
        with pytest.raises(SchemaVersionError) as caught:
            await Spool(path).open()
        assert isinstance(caught.value, ConfigurationError)
        assert caught.value.found == 7
        assert caught.value.supported == SCHEMA_VERSION
        assert "newer" in str(caught.value)
    assert _version(path) == 7


def test_a_failed_migration_step_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "x.sqlite3", isolation_level=None)
    steps = (statements("CREATE TABLE a (x)"), statements("CREATE TABLE a (y)"))
    with pytest.raises(sqlite3.OperationalError):
        migrate(conn, steps, what="x")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
    assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []
    assert migrate(conn, steps[:1], what="x") == 0
    assert migrate(conn, steps[:1], what="x") == 1
    conn.close()


async def test_the_bridge_runs_jobs_on_its_thread_and_returns_their_errors(
    tmp_path: Path,
) -> None:
    path = tmp_path / "bridge.sqlite3"
    bridge = SqliteThread(
        lambda: sqlite3.connect(path, isolation_level=None, check_same_thread=False),
        name="test-bridge",
    )
    with pytest.raises(ClientStateError):
        bridge.submit(lambda conn: None)
    await bridge.start()
    await bridge.run(lambda conn: conn.execute("CREATE TABLE t (x)"))
    await bridge.run(lambda conn: conn.execute("INSERT INTO t VALUES (1)"))
    with pytest.raises(sqlite3.OperationalError):
        await bridge.run(lambda conn: conn.execute("SELECT * FROM missing"))
    rows = await bridge.run(lambda conn: conn.execute("SELECT x FROM t").fetchall())
    assert rows == [(1,)]
    await bridge.close()
    with pytest.raises(ClientStateError):
        bridge.submit(lambda conn: None)
