"""Erasure, suppression and retention in PostgreSQL (``_erasure``, ``_retention``), on an
asyncpg connection inside a transaction.

An erasure takes the organization's erasure lock (a transaction advisory lock) exclusively;
every write takes it shared before it reads the suppressions: an erasure and a write never
interleave, so a write that began before the erasure committed has committed before the
erasure purges, and one that begins after reads its suppression.

The purged rows are invisible to every query at once; their bytes stay in the table's
pages until VACUUM reclaims them and new rows reuse the space (and in the WAL and backups
for as long as the server keeps them): ``VACUUM FULL`` rewrites a table without them.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from asyncwifi.engine._erasure import (
    Erased,
    Suppressed,
    Suppression,
    needles,
    suppression_rows,
)
from asyncwifi.engine._retention import retention_sql

__all__ = ["erase", "erase_lock_key", "retain", "suppressed"]

_SUPPRESSED = "SELECT hash, method, key_id FROM sync_suppressions WHERE organization_id = $1"


def erase_lock_key(organization: str) -> int:
    """The key of an organization's erasure lock: 64 bits of a hash of its id."""
    digest = hashlib.sha256(b"asyncwifi erasure\0" + organization.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _count(status: str) -> int:
    return int(status.rsplit(" ", 1)[-1])


async def suppressed(conn: Any, org: str, suppression: Suppression) -> Suppressed:
    """The organization's suppressions, read under the erasure lock (shared)."""
    await conn.execute("SELECT pg_advisory_xact_lock_shared($1)", erase_lock_key(org))
    rows = await conn.fetch(_SUPPRESSED, org)
    return Suppressed([(r[0], r[1], r[2]) for r in rows], suppression)


async def erase(conn: Any, org: str, cids: list[str], suppression: Suppression) -> Erased:
    """Erase ``cids`` (see ``Destination.erase``)."""
    await conn.execute("SELECT pg_advisory_xact_lock($1)", erase_lock_key(org))
    rows = await conn.fetch(_SUPPRESSED, org)
    Suppressed([(r[0], r[1], r[2]) for r in rows], suppression)  # one key: refused otherwise
    if not cids:
        return Erased()  # the key checked, nothing to erase
    found = await conn.fetch(
        "SELECT id, email, phone FROM contacts WHERE organization_id = $1 AND id = ANY($2::text[])",
        org,
        cids,
    )
    stored = {str(r[0]): (r[1], r[2]) for r in found}
    now, added = datetime.now(UTC), 0
    for row in suppression_rows(suppression, stored, cids):
        added += _count(
            await conn.execute(
                "INSERT INTO sync_suppressions "
                "(organization_id, hash, kind, method, key_id, erased_at) "
                "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
                org,
                *row,
                now,
            )
        )
    marks = needles(stored, cids)
    contacts = _count(
        await conn.execute(
            "DELETE FROM contacts WHERE organization_id = $1 AND id = ANY($2::text[])", org, cids
        )
    )
    events = _count(
        await conn.execute(
            "DELETE FROM events WHERE organization_id = $1 AND (customer_id = ANY($2::text[]) "
            "OR EXISTS (SELECT 1 FROM unnest($3::text[]) m WHERE strpos(raw::text, m) > 0))",
            org,
            cids,
            [f'"{m}"' for m in marks],
        )
    )
    letters = _count(
        await conn.execute(
            "DELETE FROM sync_dead_letters WHERE organization_id = $1 AND "
            "(record_id = ANY($2::text[]) OR EXISTS (SELECT 1 FROM unnest($3::bytea[]) m "
            "WHERE position(m IN raw) > 0))",
            org,
            cids,
            [m.encode() for m in marks],
        )
    )
    return Erased(contacts, events, letters, added)


async def retain(
    conn: Any, org: str, cutoff: datetime, by: str, letters: datetime
) -> dict[str, int]:
    """Purge what the retention no longer keeps (see ``Destination.retain``)."""
    purged = {}
    for table, sql in retention_sql(by, ("$1", "$2")).items():
        before = letters if table == "sync_dead_letters" else cutoff
        count = _count(await conn.execute(sql, org, before))
        if count:
            purged[table] = count
    return purged
