"""The PostgreSQL destination (asyncpg): each batch is COPYed into a staging table, then
moved with one upsert, in the transaction that also saves the checkpoint.

COPY (binary) is the fastest way rows enter PostgreSQL; the upsert from staging
(``INSERT .. SELECT .. ON CONFLICT (id) DO UPDATE .. WHERE raw IS DISTINCT FROM``) then
writes only what changed. Staging tables are temporary (``ON COMMIT DELETE ROWS``), one
per resource table per connection. Events never change, and the feed hands each out once:
their rows are COPYed straight into ``events`` (half the server's work); only when that
meets a row already there (a batch replayed after a crash) does the batch take the
staging route, inside the same transaction (a savepoint undoes the failed COPY).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from asyncwifi.sync._schema import MIGRATIONS_TABLE, TABLES, migrations_for
from asyncwifi.sync._store import Store, StoreUnavailableError, Write, digest

__all__ = ["PostgresStore", "unavailable"]

# PostgreSQL error classes that mean "not now" (08: connection exception, 57P: operator
# intervention such as a shutdown or a restart)
_TRANSIENT_STATES = ("08", "57P")


def unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` means the server cannot be reached now (retry later)."""
    import asyncpg

    if isinstance(
        exc,
        OSError | asyncio.TimeoutError | asyncpg.InterfaceError | asyncpg.InternalClientError,
    ):
        return True
    if isinstance(exc, asyncpg.PostgresError):
        state = getattr(exc, "sqlstate", "") or ""
        return state.startswith(_TRANSIENT_STATES)
    return False


class PostgresStore(Store):
    """``postgresql://...``: see the module docstring."""

    dialect = "postgresql"

    def __init__(self, url: str, *, connect_timeout: float = 10.0) -> None:
        self.url = url
        self.connect_timeout = connect_timeout
        self._conn: Any = None
        self._staged: set[str] = set()

    def __repr__(self) -> str:
        # the URL may hold a password: show the host part only
        host = self.url.split("@", 1)[-1].split("/", 1)[0]
        return f"PostgresStore({host!r})"

    async def _connection(self) -> Any:
        import asyncpg

        conn = self._conn
        if conn is not None and not conn.is_closed():
            return conn
        self._conn = None
        self._staged.clear()
        try:
            conn = await asyncpg.connect(self.url, timeout=self.connect_timeout)
        except Exception as exc:
            if unavailable(exc):
                raise StoreUnavailableError(f"PostgreSQL at {self!r}: {exc}") from exc
            raise
        self._conn = conn
        return conn

    async def _call(self, fn: Any) -> Any:
        """Run ``fn(conn)``; a lost connection becomes ``StoreUnavailableError``."""
        conn = await self._connection()
        try:
            return await fn(conn)
        except Exception as exc:
            if unavailable(exc) or conn.is_closed():
                await self._drop()
                raise StoreUnavailableError(f"PostgreSQL at {self!r}: {exc}") from exc
            raise

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        self._staged.clear()
        if conn is not None:
            conn.terminate()

    async def open(self) -> None:
        await self._call(self._migrate)

    @staticmethod
    async def _migrate(conn: Any) -> None:
        async with conn.transaction():
            # one migrator at a time, across processes
            await conn.execute("SELECT pg_advisory_xact_lock(727274)")
            await conn.execute(
                f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} "
                "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL)"
            )
            applied = [r[0] for r in await conn.fetch(f"SELECT version FROM {MIGRATIONS_TABLE}")]
            for version, statements in migrations_for("postgresql", applied):
                for statement in statements:
                    await conn.execute(statement)
                await conn.execute(
                    f"INSERT INTO {MIGRATIONS_TABLE} VALUES ($1, $2)", version, datetime.now(UTC)
                )

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            try:
                await asyncio.wait_for(conn.close(), 5.0)
            except Exception:
                conn.terminate()

    async def checkpoint(self, name: str) -> str | None:
        async def get(conn: Any) -> str | None:
            value = await conn.fetchval("SELECT value FROM sync_checkpoints WHERE name = $1", name)
            return None if value is None else str(value)

        result: str | None = await self._call(get)
        return result

    async def _stage(self, conn: Any, table: str) -> str:
        stage = f"stage_{table}"
        if table not in self._staged:
            await conn.execute(
                f"CREATE TEMP TABLE IF NOT EXISTS {stage} "
                f"(LIKE {table} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
            )
            self._staged.add(table)
        return stage

    async def write(self, write: Write) -> int:
        table = TABLES[write.table]
        names = table.names
        cols = ", ".join(names)
        sets = ", ".join(f"{n} = EXCLUDED.{n}" for n in names[1:])
        changed = f"{table.name}.raw IS DISTINCT FROM EXCLUDED.raw"
        if table.deletes:
            sets += ", deleted_at = NULL"
            changed += f" OR {table.name}.deleted_at IS NOT NULL"
        now = datetime.now(UTC)

        async def upsert(conn: Any) -> int:
            stage = await self._stage(conn, table.name)
            await conn.copy_records_to_table(stage, records=write.rows, columns=names)
            status = await conn.execute(
                f"INSERT INTO {table.name} ({cols}) "
                f"SELECT DISTINCT ON (id) {cols} FROM {stage} "
                f"ON CONFLICT (id) DO UPDATE SET {sets} WHERE {changed}"
            )
            return int(status.rsplit(" ", 1)[-1])

        async def insert_new(conn: Any) -> int:
            import asyncpg

            try:
                async with conn.transaction():  # a savepoint
                    await conn.copy_records_to_table(table.name, records=write.rows, columns=names)
            except asyncpg.UniqueViolationError:
                return await upsert(conn)  # a replay: some rows are there already
            return len(write.rows)

        async def apply(conn: Any) -> int:
            written = 0
            if write.rows and table.deletes:
                await self._stage(conn, table.name)  # not inside the transaction below
            async with conn.transaction():
                if write.rows:
                    written += await (upsert(conn) if table.deletes else insert_new(conn))
                if write.seen is not None and table.deletes:
                    status = await conn.execute(
                        f"UPDATE {table.name} SET deleted_at = $1 WHERE deleted_at IS NULL "
                        "AND NOT (id = ANY($2::text[]))",
                        now,
                        list(write.seen),
                    )
                    written += int(status.rsplit(" ", 1)[-1])
                for bad in write.bad:
                    status = await conn.execute(
                        "INSERT INTO sync_dead_letters "
                        "(resource, record_id, digest, error, raw, first_seen) "
                        "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (resource, digest) "
                        "DO NOTHING",
                        write.table,
                        bad.id,
                        digest(bad.raw),
                        bad.error,
                        bad.raw,
                        now,
                    )
                    written += int(status.rsplit(" ", 1)[-1])
                if write.checkpoints:
                    await conn.executemany(
                        "INSERT INTO sync_checkpoints VALUES ($1, $2, $3) ON CONFLICT (name) "
                        "DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at "
                        "WHERE sync_checkpoints.value IS DISTINCT FROM EXCLUDED.value",
                        [(name, value, now) for name, value in write.checkpoints.items()],
                    )
            return written

        result: int = await self._call(apply)
        return result

    async def ids(self, table: str, *, deleted: bool = False) -> set[str]:
        spec = TABLES[table]
        where = ""
        if spec.deletes:
            where = " WHERE deleted_at IS NOT NULL" if deleted else " WHERE deleted_at IS NULL"

        async def get(conn: Any) -> set[str]:
            return {r[0] for r in await conn.fetch(f"SELECT id FROM {spec.name}{where}")}

        result: set[str] = await self._call(get)
        return result

    async def count(self, table: str) -> int:
        async def get(conn: Any) -> int:
            return int(await conn.fetchval(f"SELECT count(*) FROM {TABLES[table].name}"))

        result: int = await self._call(get)
        return result

    async def schema_version(self) -> int:
        async def get(conn: Any) -> int:
            sql = f"SELECT coalesce(max(version), 0) FROM {MIGRATIONS_TABLE}"
            return int(await conn.fetchval(sql))

        result: int = await self._call(get)
        return result
