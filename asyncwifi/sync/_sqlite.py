"""The embedded destination: SQLite through the standard library, on the package's bridge.

sqlite3 blocks, so the connection lives on a thread of its own (``_sqlite.SqliteThread``)
and the event loop never waits on the disk. The bridge runs each job in ``BEGIN IMMEDIATE``
.. ``COMMIT`` (group commit), so a batch's rows and its checkpoint commit together. WAL
journaling lets readers query while the sync writes. The schema is ``_schema.STEPS``,
versioned in ``PRAGMA user_version`` (``_sqlite.migrate``). A view for another organization
(``for_organization``) shares the thread, and the file's write lock orders a lease check
against a lease taken by another connection.
"""

from __future__ import annotations

import copy
import json
import os
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import TypeVar

from asyncwifi._instant import format_instant, read_instant
from asyncwifi._protocol import require_text
from asyncwifi._sqlite import SqliteThread, Step, migrate, statements
from asyncwifi.errors import ConfigurationError
from asyncwifi.sync._destination import (
    Destination,
    DestinationUnavailableError,
    LeaseLostError,
    Write,
    digest,
)
from asyncwifi.sync._schema import (
    HAS_ROWS,
    MIGRATIONS_TABLE,
    STEPS,
    TABLES,
    check_organization,
    claim_sql,
    lease_sql,
    organization_of,
)

__all__ = ["SqliteDestination"]

T = TypeVar("T")
_TAKE_LEASE, _LEASE = lease_sql(("?", "?", "?"))
_CLAIM, _HOLDER, _STAMP = claim_sql(("?1", "?2", "?3", "?4"))


def _value(value: object) -> object:
    if isinstance(value, datetime):
        return format_instant(value, "microseconds")  # sorts like time
    return value


def _v1_or_carried_over(conn: sqlite3.Connection) -> None:
    """Version 1; or a file of the scheme before ``user_version`` (a ``schema_migrations``
    table, which only ever held version 1) carried over: its tables and rows kept, the
    table dropped (``user_version`` says it now)."""
    legacy = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (MIGRATIONS_TABLE,))
    if (
        legacy.fetchone() is None
        or not conn.execute(f"SELECT 1 FROM {MIGRATIONS_TABLE} WHERE version = 1").fetchone()
    ):
        statements(STEPS[0]("sqlite", ""))(conn)
    conn.execute(f"DROP TABLE IF EXISTS {MIGRATIONS_TABLE}")


def _steps(organization: str, what: str) -> list[Step]:
    """``_schema.STEPS`` in SQLite's spelling, rows of version 1 carried over to
    ``organization``."""

    def v2(conn: sqlite3.Connection) -> None:
        has_rows = bool(conn.execute(HAS_ROWS).fetchone()[0])
        statements(STEPS[1]("sqlite", organization_of(organization, has_rows, what)))(conn)

    later = (statements(step("sqlite", organization)) for step in STEPS[2:])
    return [_v1_or_carried_over, v2, *later]


class SqliteDestination(Destination):
    """``sqlite:///PATH``: see the module docstring."""

    dialect = "sqlite"

    def __init__(self, path: str, *, organization: str | None = None) -> None:
        self.path = path
        self.organization = check_organization(organization)
        self._db = SqliteThread(self._connect, name="asyncwifi-sync-sqlite", group_commit=True)
        self._owner = True  # a view (``for_organization``) does not close the thread

    def __repr__(self) -> str:
        return f"SqliteDestination({self.path!r}, organization={self.organization!r})"

    def for_organization(self, organization: str) -> SqliteDestination:
        view = copy.copy(self)  # the same thread and file
        view.organization = require_text(organization, "organization")
        view.lease = None
        view._owner = False
        return view

    def _connect(self) -> sqlite3.Connection:
        """On the bridge's thread: open, migrate (first: a newer file is refused before
        anything in it changes), then WAL. A file in a folder that does not exist is a
        setting to fix (``ConfigurationError``), not an outage to wait for."""
        folder = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(folder):
            raise ConfigurationError(
                f"the SQLite database {self.path} cannot be created: its folder {folder} "
                "does not exist"
            )
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        try:
            what = f"the sync database {self.path}"
            migrate(conn, _steps(self.organization, what), what=what)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        except BaseException:
            conn.close()
            raise
        return conn

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(conn)`` in a transaction of its own (or shared with the jobs queued with it);
        a locked or failing database is ``DestinationUnavailableError``."""
        if not self._db.running:
            raise DestinationUnavailableError("the SQLite destination is not open")
        try:
            return await self._db.run(fn)
        except sqlite3.OperationalError as exc:
            raise DestinationUnavailableError(f"SQLite: {exc}") from exc

    async def open(self) -> None:
        try:
            await self._db.start()
        except sqlite3.Error as exc:
            raise DestinationUnavailableError(f"cannot open {self.path}: {exc}") from exc

    async def close(self) -> None:
        if self._owner:
            await self._db.close()

    async def checkpoint(self, name: str) -> str | None:
        sql = "SELECT value FROM sync_checkpoints WHERE organization_id = ? AND name = ?"
        org = self.organization
        row = await self._run(lambda conn: conn.execute(sql, (org, name)).fetchone())
        return None if row is None else str(row[0])

    async def take_lease(self, holder: str) -> int:
        require_text(holder, "holder")
        params = (self.organization, holder, _value(datetime.now(UTC)))
        token = await self._run(lambda conn: int(conn.execute(_TAKE_LEASE, params).fetchone()[0]))
        self.lease = token
        return token

    async def claim_lease(self, holder: str, cutoff: datetime) -> int | None:
        require_text(holder, "holder")
        params = (self.organization, holder, _value(datetime.now(UTC)), _value(cutoff))
        row = await self._run(lambda conn: conn.execute(_CLAIM, params).fetchone())
        if row is None:
            return None
        self.lease = int(row[0])
        return self.lease

    async def lease_holder(self) -> tuple[str, datetime] | None:
        org = (self.organization,)
        row = await self._run(lambda conn: conn.execute(_HOLDER, org).fetchone())
        return None if row is None else (str(row[0]), read_instant(str(row[1])))

    async def stamp_lease(self, when: datetime) -> bool:
        params = (self.organization, _value(when), self.lease)
        return bool(await self._run(lambda conn: conn.execute(_STAMP, params).rowcount))

    def _fence(self, conn: sqlite3.Connection, lease: int | None) -> None:
        """Inside a write's transaction (the file's write lock held): refuse it if the
        organization's lease is no longer ``lease``."""
        if lease is None:
            return
        row = conn.execute(_LEASE, (self.organization,)).fetchone()
        current = None if row is None else int(row[0])
        if current != lease:
            raise LeaseLostError(self.organization, lease, current)

    async def write(self, write: Write, after: Awaitable[object] | None = None) -> int:
        if after is not None:  # one connection: in order, one after the other
            await after
        table = TABLES[write.table]
        names = [*table.names, "organization_id"]
        upsert = (
            f"INSERT INTO {table.name} ({', '.join(names)}) "
            f"VALUES ({', '.join('?' * len(names))}) {table.on_conflict('sqlite')}"
        )
        now = _value(datetime.now(UTC))
        org, lease = self.organization, self.lease

        def apply(conn: sqlite3.Connection) -> int:
            self._fence(conn, lease)
            before = conn.total_changes
            if write.rows:
                conn.executemany(upsert, ([*map(_value, row), org] for row in write.rows))
            written = conn.total_changes - before
            if write.seen is not None and table.deletes:
                conn.execute("CREATE TEMP TABLE IF NOT EXISTS seen_ids (id TEXT PRIMARY KEY)")
                conn.execute("DELETE FROM seen_ids")
                conn.executemany(
                    "INSERT OR IGNORE INTO seen_ids VALUES (?)", ((i,) for i in write.seen)
                )
                mark = conn.execute(
                    f"UPDATE {table.name} SET deleted_at = ? WHERE organization_id = ? "
                    "AND deleted_at IS NULL AND id NOT IN (SELECT id FROM seen_ids)",
                    (now, org),
                )
                written += mark.rowcount
            for bad in write.bad:
                cur = conn.execute(
                    "INSERT INTO sync_dead_letters "
                    "(resource, record_id, digest, error, raw, first_seen, organization_id) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (organization_id, resource, digest) DO NOTHING",
                    (write.table, bad.id, digest(bad.raw), bad.error, bad.raw, now, org),
                )
                written += cur.rowcount
            for name, value in write.checkpoints.items():
                conn.execute(
                    "INSERT INTO sync_checkpoints (name, value, updated_at, organization_id) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT (organization_id, name) "
                    "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at "
                    "WHERE sync_checkpoints.value IS NOT excluded.value",
                    (name, value, now, org),
                )
            return written

        return await self._run(apply)

    async def ids(self, table: str, *, deleted: bool = False) -> set[str]:
        sql, org = TABLES[table].select_ids("?", deleted=deleted), (self.organization,)
        return await self._run(lambda conn: {str(r[0]) for r in conn.execute(sql, org)})

    async def existing(self, table: str, ids: Sequence[str]) -> set[str]:
        sql = (
            f"SELECT id FROM {TABLES[table].name} WHERE organization_id = ? "
            "AND id IN (SELECT value FROM json_each(?))"
        )
        params = (self.organization, json.dumps(list(ids)))
        return await self._run(lambda conn: {str(r[0]) for r in conn.execute(sql, params)})

    async def count(self, table: str) -> int:
        sql = f"SELECT count(*) FROM {TABLES[table].name} WHERE organization_id = ?"
        org = (self.organization,)
        return await self._run(lambda conn: int(conn.execute(sql, org).fetchone()[0]))

    async def schema_version(self) -> int:
        return await self._run(lambda conn: int(conn.execute("PRAGMA user_version").fetchone()[0]))
