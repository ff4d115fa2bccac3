"""The PostgreSQL destination (asyncpg): each batch is COPYed into a staging table, then
moved with one upsert, in the transaction that also saves the checkpoint.

COPY (binary) is the fastest way rows enter PostgreSQL; the upsert from staging
(``INSERT .. SELECT .. ON CONFLICT (id) DO UPDATE .. WHERE raw IS DISTINCT FROM``) then
writes only what changed. Staging tables are temporary (``ON COMMIT DELETE ROWS``), one
per resource table per connection. Events never change, and the feed hands each out once:
their rows are COPYed straight into ``events`` (half the server's work); only when that
meets a row already there (a batch replayed after a crash) does the batch take the
staging route, inside the same transaction (a savepoint undoes the failed COPY).

Event batches load side by side on ``writers`` connections (2 by default): the server
parses and indexes one batch while it receives the next. Each transaction writes its
checkpoint, and commits, only after the previous batch committed, so the order the
checkpoints reach the database is the feed's.

Views for other organizations (``for_organization``) share the pool of connections;
``max_connections`` bounds it (callers queue, first come first served, so a batch that
waits for the one before it never holds up that one's connection). With a
lease taken, each write locks the organization's ``sync_leases`` row (an ``UPDATE .. WHERE
token = $2``) once the write before it committed, just before its own deletes, dead letters
and checkpoint: no row means the lease was taken over, and the transaction is undone; a
``take_lease`` meanwhile waits for the commit.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

from asyncwifi._auth import check_url, hide_password, redact_url
from asyncwifi._defaults import CONNECT_TIMEOUT
from asyncwifi._extras import require
from asyncwifi._protocol import require_positive, require_text
from asyncwifi._sqlite import pending
from asyncwifi.engine._destination import (
    Destination,
    DestinationUnavailableError,
    LeaseLostError,
    Write,
)
from asyncwifi.engine._erasure import Erased, Suppression
from asyncwifi.engine._postgres_deletes import finish
from asyncwifi.engine._postgres_errors import refused, unavailable
from asyncwifi.engine._postgres_privacy import erase, retain, suppressed
from asyncwifi.engine._schema import (
    HAS_ROWS,
    MIGRATIONS_TABLE,
    STEPS,
    TABLES,
    check_organization,
    claim_sql,
    lease_lock_key,
    lease_sql,
    organization_of,
)
from asyncwifi.errors import ConfigurationError, ValidationError

__all__ = ["PostgresDestination"]

T = TypeVar("T")
_TAKE_LEASE, _LEASE = lease_sql(("$1", "$2", "$3"))
_CLAIM, _HOLDER, _STAMP = claim_sql(("$1", "$2", "$3", "$4", "$5"))


@dataclass(eq=False, slots=True)
class _Session:
    """One connection and the staging tables created on it."""

    conn: Any
    staged: set[str] = field(default_factory=set)


class PostgresDestination(Destination):
    """``postgresql://...``: see the module docstring."""

    dialect = "postgresql"

    def __init__(
        self,
        url: str,
        *,
        organization: str | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
        writers: int = 2,
        max_connections: int | None = None,
    ) -> None:
        if not isinstance(writers, int) or writers < 1:
            raise ValidationError(f"writers must be a positive integer, got {writers!r}")
        if max_connections is not None:
            require_positive(max_connections, "max_connections", integer=True)
        check_url(url, "PostgreSQL")
        require("asyncpg", "sync", "a PostgreSQL destination")  # before anything starts
        self.url = url
        self.organization = check_organization(organization)
        self.connect_timeout = connect_timeout
        self.concurrency = writers
        self._idle: list[_Session] = []  # shared with the views
        #: the connections open at once, views included (None: as many as asked for)
        self._slots = None if max_connections is None else asyncio.Semaphore(max_connections)
        self._owner = True  # a view (``for_organization``) does not close the pool
        #: the connection whose session holds :meth:`hold_organization`'s lock
        self._holding: Any = None

    def __repr__(self) -> str:
        return f"PostgresDestination({redact_url(self.url)!r}, organization={self.organization!r})"

    def for_organization(self, organization: str) -> PostgresDestination:
        view = copy.copy(self)  # the same pool
        view.organization = require_text(organization, "organization")
        view.lease = None
        view._owner = False
        view._holding = None
        return view

    holds_across_hosts = True

    async def hold_organization(self) -> bool | None:
        """A session-level advisory lock on a key of the organization, on a connection of
        its own: the server drops it when the connection goes (its process killed, its host
        gone), whatever host held it. A connection lost meanwhile is opened again."""
        if self._holding is not None and not self._holding.conn.is_closed():
            return True
        self._holding = None
        session = await self._session()  # taken out of the pool while it holds the lock
        try:
            held = await session.conn.fetchval(
                "SELECT pg_try_advisory_lock($1)", lease_lock_key(self.organization)
            )
        except BaseException as exc:
            session.conn.terminate()
            if isinstance(exc, Exception) and unavailable(exc):
                raise self._unavailable(exc) from exc
            raise
        if not held:
            self._idle.append(session)  # it holds nothing: back to the pool
            return False
        self._holding = session
        return True

    async def release_organization(self) -> None:
        holding, self._holding = self._holding, None
        if holding is not None and not holding.conn.is_closed():
            try:
                await asyncio.wait_for(holding.conn.close(), 5.0)  # the lock goes with it
            except Exception:
                holding.conn.terminate()

    def _unavailable(self, exc: BaseException) -> DestinationUnavailableError:
        return DestinationUnavailableError(
            f"PostgreSQL at {self!r}: {hide_password(str(exc), self.url)}"
        )

    async def _session(self) -> _Session:
        while self._idle:
            session = self._idle.pop()
            if not session.conn.is_closed():
                return session
        import asyncpg

        try:
            conn = await asyncpg.connect(self.url, timeout=self.connect_timeout)
        except Exception as exc:
            if unavailable(exc):
                raise self._unavailable(exc) from exc
            if isinstance(exc, asyncpg.PostgresError):
                # the server answered and refused us: a role, a database or a password
                # that is wrong (retrying cannot help)
                raise ConfigurationError(
                    f"PostgreSQL at {redact_url(self.url)} refused the connection: "
                    f"{hide_password(str(exc), self.url)}"
                ) from exc
            raise
        return _Session(conn)

    async def _call(self, fn: Callable[[_Session], Awaitable[T]]) -> T:
        """Run ``fn`` on a connection of its own (within ``max_connections``); a lost
        connection becomes ``DestinationUnavailableError`` (and the idle ones are dropped:
        the server went away)."""
        if self._slots is None:
            return await self._run(fn)
        async with self._slots:
            return await self._run(fn)

    async def _run(self, fn: Callable[[_Session], Awaitable[T]]) -> T:
        session = await self._session()
        try:
            result = await fn(session)
        except BaseException as exc:
            if isinstance(exc, Exception) and (unavailable(exc) or session.conn.is_closed()):
                session.conn.terminate()
                self._drop_idle()
                raise self._unavailable(exc) from exc
            if isinstance(exc, Exception) and not session.conn.is_in_transaction():
                self._idle.append(session)  # an error the transaction rolled back
                refusal = refused(exc, await self._role(session), redact_url(self.url))
                if refusal is not None:
                    raise refusal from exc
            else:
                session.conn.terminate()
            raise
        self._idle.append(session)
        return result

    async def _role(self, session: _Session) -> str:
        """The role this destination connects as (for a refusal's message)."""
        try:
            return str(await session.conn.fetchval("SELECT current_user"))
        except Exception:
            return urlsplit(self.url).username or "?"

    def _drop_idle(self) -> None:
        idle = self._idle[:]
        self._idle.clear()  # the list the views share
        for session in idle:
            session.conn.terminate()

    async def open(self) -> None:
        await self._call(self._migrate)

    async def _migrate(self, session: _Session) -> None:
        """The steps of ``_schema.STEPS`` the database lacks, in one transaction; a database
        of a newer release is refused (``pending``) and the transaction undone."""
        conn = session.conn
        async with conn.transaction():
            # one migrator at a time, across processes
            await conn.execute("SELECT pg_advisory_xact_lock(727274)")
            await conn.execute(
                f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} "
                "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL)"
            )
            found = await conn.fetchval(f"SELECT coalesce(max(version), 0) FROM {MIGRATIONS_TABLE}")
            what = f"the sync database {redact_url(self.url)}"
            for version, step in enumerate(pending(STEPS, found, what=what), found + 1):
                organization = self.organization
                if version == 2:  # the rows of version 1 become an organization's
                    has_rows = bool(await conn.fetchval(HAS_ROWS))
                    organization = organization_of(organization, has_rows, what)
                for statement in step("postgresql", organization):
                    await conn.execute(statement)
                await conn.execute(
                    f"INSERT INTO {MIGRATIONS_TABLE} VALUES ($1, $2)", version, datetime.now(UTC)
                )

    async def close(self) -> None:
        await self.release_organization()
        if not self._owner:
            return
        idle = self._idle[:]
        self._idle.clear()
        for session in idle:
            if not session.conn.is_closed():
                try:
                    await asyncio.wait_for(session.conn.close(), 5.0)
                except Exception:
                    session.conn.terminate()

    async def checkpoint(self, name: str) -> str | None:
        async def get(session: _Session) -> str | None:
            sql = "SELECT value FROM sync_checkpoints WHERE organization_id = $1 AND name = $2"
            value = await session.conn.fetchval(sql, self.organization, name)
            return None if value is None else str(value)

        return await self._call(get)

    async def take_lease(self, holder: str) -> int:
        require_text(holder, "holder")

        async def take(session: _Session) -> int:
            args = (self.organization, holder, datetime.now(UTC))
            return int(await session.conn.fetchval(_TAKE_LEASE, *args))

        self.lease = await self._call(take)
        return self.lease

    async def claim_lease(
        self, holder: str, cutoff: datetime, *, dead: str | None = None
    ) -> int | None:
        holder = require_text(holder, "holder")
        args = (self.organization, holder, datetime.now(UTC), cutoff, dead)

        async def claim(session: _Session) -> int | None:
            token = await session.conn.fetchval(_CLAIM, *args)
            return None if token is None else int(token)

        token = await self._call(claim)
        if token is not None:
            self.lease = token
        return token

    async def lease_holder(self) -> tuple[str, datetime] | None:
        async def who(session: _Session) -> tuple[str, datetime] | None:
            row = await session.conn.fetchrow(_HOLDER, self.organization)
            return None if row is None else (str(row[0]), row[1])

        return await self._call(who)

    async def stamp_lease(self, when: datetime) -> bool:
        async def stamp(session: _Session) -> bool:
            status = await session.conn.execute(_STAMP, self.organization, when, self.lease)
            return bool(status != "UPDATE 0")

        return await self._call(stamp)

    async def _fence(self, conn: Any, lease: int | None) -> None:
        """Inside a write's transaction: lock the organization's lease row if it still holds
        ``lease`` (a ``take_lease`` now waits for the commit), else refuse the write."""
        if lease is None:
            return
        status = await conn.execute(
            "UPDATE sync_leases SET token = token WHERE organization_id = $1 AND token = $2",
            self.organization,
            lease,
        )
        if status == "UPDATE 0":
            current = await conn.fetchval(_LEASE, self.organization)
            raise LeaseLostError(self.organization, lease, current)

    @staticmethod
    async def _stage(session: _Session, table: str) -> str:
        stage = f"stage_{table}"
        if table not in session.staged:
            await session.conn.execute(
                f"CREATE TEMP TABLE IF NOT EXISTS {stage} "
                f"(LIKE {table} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
            )
            session.staged.add(table)
        return stage

    async def write(self, write: Write, after: Awaitable[object] | None = None) -> int:
        table = TABLES[write.table]
        names = [*table.names, "organization_id"]
        cols = ", ".join(names)
        now = datetime.now(UTC)
        org, lease, suppression = self.organization, self.lease, self.suppressor()
        records = [(*row, org) for row in write.rows]

        async def upsert(session: _Session) -> int:
            stage = await self._stage(session, table.name)
            conn = session.conn
            await conn.copy_records_to_table(stage, records=records, columns=names)
            status = await conn.execute(
                f"INSERT INTO {table.name} ({cols}) SELECT DISTINCT ON (id) {cols} "
                f"FROM {stage} {table.on_conflict('postgresql')}"
            )
            return int(status.rsplit(" ", 1)[-1])

        async def insert_new(session: _Session) -> int:
            import asyncpg

            conn = session.conn
            try:
                async with conn.transaction():  # a savepoint
                    await conn.copy_records_to_table(table.name, records=records, columns=names)
            except asyncpg.UniqueViolationError:
                return await upsert(session)  # a replay: some rows are there already
            return len(records)

        async def apply(session: _Session) -> int:
            conn = session.conn
            written = 0
            if records and table.deletes:
                await self._stage(session, table.name)  # not inside the transaction below
            async with conn.transaction():
                kept = await suppressed(conn, org, suppression)  # erased contacts stay out
                if kept and kept.keep(write, table.names):
                    records[:] = [(*row, org) for row in write.rows]
                if records:
                    written += await (upsert(session) if table.deletes else insert_new(session))
                if after is not None:
                    await after  # the batch before commits first (see the module docstring)
                await self._fence(conn, lease)
                written += await self._finish(conn, write, org, now)
            return written

        return await self._call(apply)

    #: a write's deletes, dead letters and checkpoints after its rows (``_postgres_deletes``)
    _finish = staticmethod(finish)

    async def erase(self, cids: Sequence[str], suppression: Suppression | None = None) -> Erased:
        hasher, org = suppression or self.suppressor(), self.organization

        async def run(session: _Session) -> Erased:
            async with session.conn.transaction():
                return await erase(session.conn, org, list(cids), hasher)

        return await self._call(run)

    async def retain(self, cutoff: datetime, by: str, letters: datetime) -> dict[str, int]:
        async def run(session: _Session) -> dict[str, int]:
            async with session.conn.transaction():
                return await retain(session.conn, self.organization, cutoff, by, letters)

        return await self._call(run)

    async def ids(self, table: str, *, deleted: bool = False) -> set[str]:
        sql = TABLES[table].select_ids("$1", deleted=deleted)

        async def get(session: _Session) -> set[str]:
            return {r[0] for r in await session.conn.fetch(sql, self.organization)}

        return await self._call(get)

    async def existing(self, table: str, ids: Sequence[str]) -> set[str]:
        sql = (
            f"SELECT id FROM {TABLES[table].name} "
            "WHERE organization_id = $1 AND id = ANY($2::text[])"
        )

        async def get(session: _Session) -> set[str]:
            return {r[0] for r in await session.conn.fetch(sql, self.organization, list(ids))}

        return await self._call(get)

    async def count(self, table: str) -> int:
        async def get(session: _Session) -> int:
            # live rows (what a plan costs: a row marked deleted is not read again)
            sql = f"SELECT count(*) FROM ({TABLES[table].select_ids('$1')}) AS live"
            return int(await session.conn.fetchval(sql, self.organization))

        return await self._call(get)

    async def schema_version(self) -> int:
        async def get(session: _Session) -> int:
            sql = f"SELECT coalesce(max(version), 0) FROM {MIGRATIONS_TABLE}"
            return int(await session.conn.fetchval(sql))

        return await self._call(get)
