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

import asyncio
import contextlib
import copy
import hashlib
import json
import logging
import os
import re
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from asyncwifi._instant import format_instant, read_instant
from asyncwifi._protocol import require_text
from asyncwifi._sqlite import SqliteThread, Step, migrate, statements
from asyncwifi.engine._destination import (
    Destination,
    DestinationUnavailableError,
    LeaseLostError,
    Write,
    digest,
)
from asyncwifi.engine._erasure import (
    Erased,
    Suppressed,
    Suppression,
    needles,
    suppression_rows,
)
from asyncwifi.engine._lockfile import LockHeldError, ProcessLock
from asyncwifi.engine._retention import retention_sql
from asyncwifi.engine._schema import (
    HAS_ROWS,
    MIGRATIONS_TABLE,
    STEPS,
    TABLES,
    check_organization,
    claim_sql,
    lease_sql,
    organization_of,
)
from asyncwifi.engine._sqlite_file import check_sync_database, failure
from asyncwifi.errors import ConfigurationError

__all__ = ["SqliteDestination"]

T = TypeVar("T")
_TAKE_LEASE, _LEASE = lease_sql(("?", "?", "?"))
_CLAIM, _HOLDER, _STAMP = claim_sql(("?1", "?2", "?3", "?4", "?5"))
_SUPPRESSED = "SELECT hash, method, key_id FROM sync_suppressions WHERE organization_id = ?"
_SUPPRESS = (
    "INSERT INTO sync_suppressions (organization_id, hash, kind, method, key_id, erased_at) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)


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


def _lock_path(database: str, organization: str) -> str:
    """``PATH.ORGANIZATION.lock`` beside the database (a name that is not a plain file name
    is hashed)."""
    name = organization
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", name):
        name = hashlib.sha256(organization.encode()).hexdigest()[:16]
    return f"{database}.{name}.lock" if organization else f"{database}.lock"


class SqliteDestination(Destination):
    """``sqlite:///PATH``: see the module docstring."""

    dialect = "sqlite"

    def __init__(self, path: str, *, organization: str | None = None) -> None:
        self.path = path
        self.organization = check_organization(organization)
        self._db = SqliteThread(self._connect, name="asyncwifi-sync-sqlite", group_commit=True)
        self._owner = True  # a view (``for_organization``) does not close the thread
        self._held: ProcessLock | None = None

    def __repr__(self) -> str:
        return f"SqliteDestination({self.path!r}, organization={self.organization!r})"

    def for_organization(self, organization: str) -> SqliteDestination:
        view = copy.copy(self)  # the same thread and file
        view.organization = require_text(organization, "organization")
        view.lease = None
        view._owner = False
        view._held = None
        return view

    async def hold_organization(self) -> bool | None:
        """A file lock (``_lockfile``) on ``PATH.ORGANIZATION.lock``, this host's only."""
        if self._held is None:
            self._held = ProcessLock(
                Path(_lock_path(self.path, self.organization)),
                guarded=f"organization {self.organization!r} in {self.path}",
                what="asyncwifi sync",
            )
        try:
            self._held.acquire()
        except LockHeldError:
            return False
        return True

    async def release_organization(self) -> None:
        if self._held is not None:
            self._held.release()

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
        created = not os.path.exists(self.path)
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        try:
            check_sync_database(conn, self.path)  # first: another file is left as it is
            what = f"the sync database {self.path}"
            migrate(conn, _steps(self.organization, what), what=what)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        except BaseException:
            conn.close()
            if created:  # a database that could not be made leaves nothing behind
                for extra in ("", "-journal", "-wal", "-shm"):
                    with contextlib.suppress(OSError):
                        os.unlink(self.path + extra)
            raise
        return conn

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(conn)`` in a transaction of its own (or shared with the jobs queued with it);
        a failure as ``_sqlite_file.failure`` names it (locked: ``DestinationUnavailableError``;
        a full disk: ``DestinationFullError``; ...)."""
        if not self._db.running:
            raise DestinationUnavailableError("the SQLite destination is not open")
        try:
            return await self._db.run(fn)
        except sqlite3.OperationalError as exc:
            raise failure(exc, self.path) from exc

    async def open(self) -> None:
        try:
            await self._db.start()
        except sqlite3.Error as exc:
            raise failure(exc, self.path) from None  # its words hold SQLite's (one line)

    async def close(self) -> None:
        await self.release_organization()
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

    async def claim_lease(
        self, holder: str, cutoff: datetime, *, dead: str | None = None
    ) -> int | None:
        require_text(holder, "holder")
        now = _value(datetime.now(UTC))
        params = (self.organization, holder, now, _value(cutoff), dead)
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
        org, lease, suppression = self.organization, self.lease, self.suppressor()

        def apply(conn: sqlite3.Connection) -> int:
            if write.purge:  # a purged row leaves no bytes in the file's free pages
                conn.execute("PRAGMA secure_delete = ON")
            self._fence(conn, lease)
            # erased contacts stay out (``_erasure``): read in this transaction, after any
            # erasure that committed before it
            suppressed = Suppressed(conn.execute(_SUPPRESSED, (org,)).fetchall(), suppression)
            if suppressed:
                suppressed.keep(write, table.names)
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
                live, retiring = conn.execute(
                    f"SELECT count(*), coalesce(sum(id NOT IN (SELECT id FROM seen_ids)), 0) "
                    f"FROM {table.name} WHERE organization_id = ? AND deleted_at IS NULL",
                    (org,),
                ).fetchone()
                if write.guarded(int(live), int(retiring)):
                    which = "id NOT IN (SELECT id FROM seen_ids)"
                    sql = write.delete_sql(table.name, "?", "?", which)
                    args: tuple[object, ...] = (org,) if write.purge else (now, org)
                    written += conn.execute(sql, args).rowcount
            if write.gone and table.deletes:
                which = "id IN (SELECT value FROM json_each(?))"
                sql = write.delete_sql(table.name, "?", "?", which)
                gone = json.dumps(sorted(write.gone))
                args = (org, gone) if write.purge else (now, org, gone)
                written += conn.execute(sql, args).rowcount
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

    async def erase(self, cids: Sequence[str], suppression: Suppression | None = None) -> Erased:
        hasher, org, now = (
            suppression or self.suppressor(),
            self.organization,
            _value(datetime.now(UTC)),
        )
        cids = list(cids)
        q = ", ".join("?" * len(cids))

        def apply(conn: sqlite3.Connection) -> Erased:
            conn.execute("PRAGMA secure_delete = ON")  # the purged bytes are zeroed
            Suppressed(conn.execute(_SUPPRESSED, (org,)).fetchall(), hasher)  # one key
            if not cids:
                return Erased()  # the key checked, nothing to erase
            found = conn.execute(
                f"SELECT id, email, phone FROM contacts WHERE organization_id = ? "
                f"AND id IN ({q})", (org, *cids),
            )  # fmt: skip
            stored = {str(r[0]): (r[1], r[2]) for r in found}
            added = sum(
                conn.execute(_SUPPRESS, (org, *row, now)).rowcount
                for row in suppression_rows(hasher, stored, cids)
            )
            marks = needles(stored, cids)
            contacts = conn.execute(
                f"DELETE FROM contacts WHERE organization_id = ? AND id IN ({q})", (org, *cids)
            ).rowcount
            tied = "".join(" OR instr(raw, ?) > 0" for _ in marks)
            events = conn.execute(
                f"DELETE FROM events WHERE organization_id = ? AND (customer_id IN ({q}){tied})",
                (org, *cids, *(f'"{m}"' for m in marks)),
            ).rowcount
            letters = conn.execute(
                f"DELETE FROM sync_dead_letters WHERE organization_id = ? "
                f"AND (record_id IN ({q}){tied})", (org, *cids, *(m.encode() for m in marks)),
            ).rowcount  # fmt: skip
            return Erased(contacts, events, letters, added)

        erased = await self._run(apply)
        await asyncio.to_thread(self._clear_wal)
        return erased

    def _clear_wal(self) -> None:
        """The WAL copied into the file and truncated: the pages before an erasure or a
        purge leave the WAL (the file's own free pages are zeroed by ``secure_delete``)."""
        conn = sqlite3.connect(self.path, timeout=30.0)
        try:
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        finally:
            conn.close()
        if busy:  # a reader of another process holds the WAL: the next checkpoint clears it
            logging.getLogger("asyncwifi.sync").warning(
                "sync: %s-wal still holds pages from before the erasure (a reader holds "
                "it); they leave at the next checkpoint",
                self.path,
            )

    async def retain(self, cutoff: datetime, by: str, letters: datetime) -> dict[str, int]:
        org, sqls = self.organization, retention_sql(by, ("?", "?"))

        def apply(conn: sqlite3.Connection) -> dict[str, int]:
            conn.execute("PRAGMA secure_delete = ON")
            return {
                table: conn.execute(
                    sql, (org, _value(letters if table == "sync_dead_letters" else cutoff))
                ).rowcount
                for table, sql in sqls.items()
            }

        purged = await self._run(apply)
        if any(purged.values()):
            await asyncio.to_thread(self._clear_wal)
        return {table: n for table, n in purged.items() if n}

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
        # live rows (what a plan costs: a row marked deleted is not read again)
        sql = f"SELECT count(*) FROM ({TABLES[table].select_ids('?')}) AS live"
        org = (self.organization,)
        return await self._run(lambda conn: int(conn.execute(sql, org).fetchone()[0]))

    async def schema_version(self) -> int:
        return await self._run(lambda conn: int(conn.execute("PRAGMA user_version").fetchone()[0]))
