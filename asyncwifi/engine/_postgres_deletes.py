"""What a PostgreSQL write retires: the live rows a complete read did not see (held back
by the mass-delete guard, :meth:`Write.guarded`) and the ids it says are gone; marked
deleted, or purged (``--on-delete purge``); and the rest of a write after its rows
(:func:`finish`: deletes, dead letters, checkpoints)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from asyncwifi.engine._destination import Write, digest
from asyncwifi.engine._schema import TABLES, Table

__all__ = ["apply_deletes", "finish"]


async def apply_deletes(conn: Any, write: Write, table: Table, now: datetime, org: str) -> int:
    """The deletes of ``write`` on ``table`` (an asyncpg connection in its transaction);
    the rows changed."""
    if not table.deletes:
        return 0
    written = 0
    if write.seen is not None:
        seen = list(write.seen)
        live, retiring = await conn.fetchrow(
            "SELECT count(*), count(*) FILTER (WHERE NOT (id = ANY($2::text[]))) "
            f"FROM {table.name} WHERE organization_id = $1 AND deleted_at IS NULL",
            org,
            seen,
        )
        if write.guarded(int(live), int(retiring)):
            written += await _delete(conn, write, table.name, now, org, "NOT (id = ANY", seen)
    if write.gone:
        written += await _delete(conn, write, table.name, now, org, "(id = ANY",
                                 sorted(write.gone))  # fmt: skip
    return written


async def _delete(
    conn: Any, write: Write, table: str, now: datetime, org: str, test: str, ids: list[str]
) -> int:
    """A write's deletes of the rows whose ids pass ``test`` (``NOT (id = ANY`` or
    ``(id = ANY``) on ``ids``: marked deleted, or purged; the rows changed."""
    if write.purge:
        sql = write.delete_sql(table, "", "$1", f"{test}($2::text[]))")
        status = await conn.execute(sql, org, ids)
    else:
        sql = write.delete_sql(table, "$1", "$2", f"{test}($3::text[]))")
        status = await conn.execute(sql, now, org, ids)
    return int(status.rsplit(" ", 1)[-1])


async def finish(conn: Any, write: Write, org: str, now: datetime) -> int:
    """A write's deletes, dead letters and checkpoints (after its rows)."""
    written = 0
    table = TABLES[write.table]
    written += await apply_deletes(conn, write, table, now, org)
    for bad in write.bad:
        status = await conn.execute(
            "INSERT INTO sync_dead_letters "
            "(resource, record_id, digest, error, raw, first_seen, organization_id) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7) "
            "ON CONFLICT (organization_id, resource, digest) DO NOTHING",
            write.table,
            bad.id,
            digest(bad.raw),
            bad.error,
            bad.raw,
            now,
            org,
        )
        written += int(status.rsplit(" ", 1)[-1])
    if write.checkpoints:
        await conn.executemany(
            "INSERT INTO sync_checkpoints (name, value, updated_at, organization_id) "
            "VALUES ($1, $2, $3, $4) ON CONFLICT (organization_id, name) "
            "DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at "
            "WHERE sync_checkpoints.value IS DISTINCT FROM EXCLUDED.value",
            [(name, value, now, org) for name, value in write.checkpoints.items()],
        )
    return written
