"""The embedded destination: SQLite through the standard library, on one thread of its own.

sqlite3 blocks, so every call runs on a single worker thread (a connection belongs to
its thread) and the event loop never waits on the disk. WAL journaling lets readers query
while the sync writes; each batch is one ``BEGIN IMMEDIATE`` .. ``COMMIT``.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import TypeVar

from asyncwifi._instant import format_instant
from asyncwifi.sync._schema import MIGRATIONS_TABLE, TABLES, migrations_for
from asyncwifi.sync._store import Store, StoreUnavailableError, Write, digest

__all__ = ["SqliteStore"]

T = TypeVar("T")


def _value(value: object) -> object:
    if isinstance(value, datetime):
        return format_instant(value, "microseconds")  # sorts like time
    return value


class SqliteStore(Store):
    """``sqlite:///PATH``: see the module docstring."""

    dialect = "sqlite"

    def __init__(self, path: str) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._pool: ThreadPoolExecutor | None = None

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r})"

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._pool is None or self._conn is None:
            raise StoreUnavailableError("the SQLite store is not open")
        conn = self._conn
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, conn)

    async def open(self) -> None:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="asyncwifi-sqlite")

        def connect() -> sqlite3.Connection:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            return conn

        loop = asyncio.get_running_loop()
        try:
            if self._conn is None:  # opened again: the same connection, migrations checked
                self._conn = await loop.run_in_executor(self._pool, connect)
        except sqlite3.Error as exc:
            raise StoreUnavailableError(f"cannot open {self.path}: {exc}") from exc
        await self._run(self._migrate)

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} "
            "(version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        applied = [r[0] for r in conn.execute(f"SELECT version FROM {MIGRATIONS_TABLE}")]
        for version, statements in migrations_for("sqlite", applied):
            conn.execute("BEGIN IMMEDIATE")
            try:
                # another process may have migrated meanwhile
                if conn.execute(
                    f"SELECT 1 FROM {MIGRATIONS_TABLE} WHERE version = ?", (version,)
                ).fetchone():
                    conn.execute("ROLLBACK")
                    continue
                for statement in statements:
                    conn.execute(statement)
                conn.execute(
                    f"INSERT INTO {MIGRATIONS_TABLE} VALUES (?, ?)",
                    (version, _value(datetime.now(UTC))),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        pool, self._pool = self._pool, None
        if pool is not None:
            if conn is not None:
                await asyncio.get_running_loop().run_in_executor(pool, conn.close)
            pool.shutdown(wait=True)

    async def checkpoint(self, name: str) -> str | None:
        def get(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT value FROM sync_checkpoints WHERE name = ?", (name,)
            ).fetchone()
            return None if row is None else str(row[0])

        return await self._run(get)

    async def write(self, write: Write, after: Awaitable[object] | None = None) -> int:
        if after is not None:  # one connection: in order, one after the other
            await after
        table = TABLES[write.table]
        names = table.names
        sets = ", ".join(f"{n} = excluded.{n}" for n in names[1:])
        changed = f"{table.name}.raw IS NOT excluded.raw"
        if table.deletes:
            sets += ", deleted_at = NULL"
            changed += f" OR {table.name}.deleted_at IS NOT NULL"
        upsert = (
            f"INSERT INTO {table.name} ({', '.join(names)}) "
            f"VALUES ({', '.join('?' * len(names))}) "
            f"ON CONFLICT (id) DO UPDATE SET {sets} WHERE {changed}"
        )
        now = _value(datetime.now(UTC))

        def apply(conn: sqlite3.Connection) -> int:
            before = conn.total_changes
            conn.execute("BEGIN IMMEDIATE")
            try:
                if write.rows:
                    conn.executemany(upsert, ([_value(v) for v in row] for row in write.rows))
                written = conn.total_changes - before
                if write.seen is not None and table.deletes:
                    conn.execute("CREATE TEMP TABLE IF NOT EXISTS seen_ids (id TEXT PRIMARY KEY)")
                    conn.execute("DELETE FROM seen_ids")
                    conn.executemany(
                        "INSERT OR IGNORE INTO seen_ids VALUES (?)", ((i,) for i in write.seen)
                    )
                    mark = conn.execute(
                        f"UPDATE {table.name} SET deleted_at = ? WHERE deleted_at IS NULL "
                        "AND id NOT IN (SELECT id FROM seen_ids)",
                        (now,),
                    )
                    written += mark.rowcount
                for bad in write.bad:
                    cur = conn.execute(
                        "INSERT INTO sync_dead_letters "
                        "(resource, record_id, digest, error, raw, first_seen) "
                        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (resource, digest) DO NOTHING",
                        (write.table, bad.id, digest(bad.raw), bad.error, bad.raw, now),
                    )
                    written += cur.rowcount
                for name, value in write.checkpoints.items():
                    conn.execute(
                        "INSERT INTO sync_checkpoints VALUES (?, ?, ?) ON CONFLICT (name) "
                        "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at "
                        "WHERE sync_checkpoints.value IS NOT excluded.value",
                        (name, value, now),
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return written

        try:
            return await self._run(apply)
        except sqlite3.OperationalError as exc:
            raise StoreUnavailableError(f"SQLite: {exc}") from exc

    async def ids(self, table: str, *, deleted: bool = False) -> set[str]:
        spec = TABLES[table]
        where = ""
        if spec.deletes:
            where = " WHERE deleted_at IS NOT NULL" if deleted else " WHERE deleted_at IS NULL"
        sql = f"SELECT id FROM {spec.name}{where}"
        return await self._run(lambda conn: {str(r[0]) for r in conn.execute(sql)})

    async def existing(self, table: str, ids: Sequence[str]) -> set[str]:
        sql = f"SELECT id FROM {TABLES[table].name} WHERE id IN (SELECT value FROM json_each(?))"
        wanted = json.dumps(list(ids))
        return await self._run(lambda conn: {str(r[0]) for r in conn.execute(sql, (wanted,))})

    async def count(self, table: str) -> int:
        sql = f"SELECT count(*) FROM {TABLES[table].name}"
        return await self._run(lambda conn: int(conn.execute(sql).fetchone()[0]))

    async def schema_version(self) -> int:
        sql = f"SELECT coalesce(max(version), 0) FROM {MIGRATIONS_TABLE}"
        return await self._run(lambda conn: int(conn.execute(sql).fetchone()[0]))
