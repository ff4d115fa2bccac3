"""The tables a sync writes, their typed columns, and the schema steps of both destinations.

Each resource table has the record's id as primary key ``id`` (for events whichever shape
the server sent: the :class:`~asyncwifi.Event` accessor), the server's exact record in
``raw`` (``jsonb`` in PostgreSQL, the exact text in SQLite), typed columns for the fields
people query, ``synced_at``, and ``deleted_at`` where deletes apply (events are never
deleted). ``sync_checkpoints`` holds each feed's checkpoint; ``sync_dead_letters`` the
records that could not be stored as such, with their raw bytes. :data:`STEPS` is the one
list of schema steps: SQLite keeps its version in ``PRAGMA user_version``
(``_sqlite.migrate``), PostgreSQL in ``schema_migrations``; the steps a database lacks run
in one transaction, and a database of a newer release is refused (``_sqlite.pending``).

Version 2 puts many organizations in one database: every table (checkpoints and dead
letters too) gets ``organization_id``, first in its primary or unique key, and
``sync_leases`` holds each organization's fencing token. A database of version 1 is
carried over in place, its rows and checkpoints given the organization it is opened for
(:func:`organization_of`: none given while it holds rows is a ``ConfigurationError``).
Version 3 adds ``sync_suppressions``: the erased contacts (``_erasure``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from asyncwifi._instant import utc_time
from asyncwifi._protocol import require_text
from asyncwifi.errors import ConfigurationError
from asyncwifi.models import Event

__all__ = [
    "HAS_ROWS",
    "MIGRATIONS_TABLE",
    "NO_ORGANIZATION",
    "STEPS",
    "TABLES",
    "Column",
    "Dialect",
    "Table",
    "check_organization",
    "claim_sql",
    "lease_lock_key",
    "lease_sql",
    "organization_of",
]

Dialect = Literal["postgresql", "sqlite"]
_TYPES: dict[str, dict[Dialect, str]] = {
    "text": {"postgresql": "text", "sqlite": "TEXT"},
    "time": {"postgresql": "timestamptz", "sqlite": "TEXT"},
    "bool": {"postgresql": "boolean", "sqlite": "INTEGER"},
    "int": {"postgresql": "bigint", "sqlite": "INTEGER"},
    "json": {"postgresql": "jsonb", "sqlite": "TEXT"},
    "bytes": {"postgresql": "bytea", "sqlite": "BLOB"},
}


@dataclass(frozen=True, slots=True)
class Column:
    """A typed column filled from the decoded record."""

    name: str
    kind: str
    get: Callable[[Any], object]


@dataclass(frozen=True, slots=True)
class Table:
    """A resource table: its typed columns, and whether deletes are tracked."""

    name: str
    columns: tuple[Column, ...]
    deletes: bool

    @property
    def names(self) -> list[str]:
        """Every column written by an upsert, in order."""
        return ["id", *(c.name for c in self.columns), "raw", "synced_at"]

    def values(self, item: Any, ident: str, raw: str, synced_at: datetime) -> list[object]:
        """One row, in :attr:`names` order."""
        return [ident, *(c.get(item) for c in self.columns), raw, synced_at]

    def on_conflict(self, dialect: Dialect) -> str:
        """An upsert's ``ON CONFLICT`` clause: a row is rewritten only when its ``raw``
        differs (or it was marked deleted), so a replayed batch writes nothing."""
        # SQLite's IS NOT is IS DISTINCT FROM (which SQLite reads only from 3.39 on)
        differs = "IS DISTINCT FROM" if dialect == "postgresql" else "IS NOT"
        sets = ", ".join(f"{n} = excluded.{n}" for n in self.names[1:])
        changed = f"{self.name}.raw {differs} excluded.raw"
        if self.deletes:
            sets += ", deleted_at = NULL"
            changed += f" OR {self.name}.deleted_at IS NOT NULL"
        return f"ON CONFLICT (organization_id, id) DO UPDATE SET {sets} WHERE {changed}"

    def select_ids(self, param: str, *, deleted: bool = False) -> str:
        """The query of one organization's (``param``: its placeholder) live ids (or those
        marked deleted)."""
        sql = f"SELECT id FROM {self.name} WHERE organization_id = {param}"
        if not self.deletes:
            return sql
        return f"{sql} AND deleted_at IS {'NOT ' if deleted else ''}NULL"


def _where(attr: str) -> Callable[[Event], object]:
    return lambda e: getattr(e.where, attr) if e.where is not None else None


TABLES: dict[str, Table] = {
    "events": Table(
        "events",
        (
            Column("type", "text", lambda e: e.type),
            Column("time", "time", lambda e: e.time),
            Column("customer_id", "text", lambda e: e.customer_id),
            Column("location_id", "text", _where("location_id")),
            Column("hotspot_id", "text", _where("hotspot_id")),
        ),
        deletes=False,
    ),
    "contacts": Table(
        "contacts",
        (
            Column("email", "text", lambda c: c.email),
            Column("phone", "text", lambda c: c.phone),
            Column("first_name", "text", lambda c: c.first_name),
            Column("last_name", "text", lambda c: c.last_name),
            Column("created", "time", lambda c: utc_time(c.created)),
            Column("modified", "time", lambda c: utc_time(c.modified)),
        ),
        deletes=True,
    ),
    "hotspots": Table(
        "hotspots",
        (
            Column("name", "text", lambda h: h.name),
            Column("venue_id", "text", lambda h: h.venue_id),
            Column("mac_address", "text", lambda h: h.mac_address),
            Column("hotspot_identifier", "text", lambda h: h.hotspot_identifier),
            Column("enabled", "bool", lambda h: h.enabled),
        ),
        deletes=True,
    ),
    "segments": Table(
        "segments",
        (
            Column("name", "text", lambda s: s.name),
            Column("segment_status", "text", lambda s: s.segment_status),
            Column("audience", "int", lambda s: s.audience),
            Column("modified", "time", lambda s: utc_time(s.modified)),
        ),
        deletes=True,
    ),
}


#: the organization of a destination opened without one (no client's organization can be
#: empty): its rows are apart from every named organization's
NO_ORGANIZATION = ""

#: the tables whose rows belong to an organization (version 2 keys them by it)
_OWNED = (*TABLES, "sync_checkpoints", "sync_dead_letters")
#: whether a database holds anything an organization owns (same SQL in both dialects)
HAS_ROWS = "SELECT " + " OR ".join(f"EXISTS (SELECT 1 FROM {t})" for t in _OWNED)


def check_organization(organization: str | None) -> str:
    """The organization a destination is opened for (:data:`NO_ORGANIZATION` for none),
    checked before anything is spent on it."""
    if organization is None:
        return NO_ORGANIZATION
    return require_text(organization, "organization")


def organization_of(organization: str, has_rows: bool, what: str) -> str:
    """The organization a database of version 1's rows and checkpoints are carried over to:
    the one it is opened for; none given while it holds rows is refused (a guess would mix
    two organizations' data for good)."""
    if has_rows and organization == NO_ORGANIZATION:
        raise ConfigurationError(
            f"{what} holds rows of one organization from before organizations: open it "
            "with organization= (the client's organization) to carry them over"
        )
    return organization


def _literal(text: str) -> str:
    """A SQL string literal (both dialects: standard quoting)."""
    return "'" + text.replace("'", "''") + "'"


def _create(table: Table, dialect: Dialect, *, name: str | None = None, org: bool = False) -> str:
    """A resource table (``org``: keyed by organization, ``organization_id`` last)."""
    text = _TYPES["text"][dialect]
    cols = [f"id {text} NOT NULL" if org else f"id {text} PRIMARY KEY"]
    cols += [f"{c.name} {_TYPES[c.kind][dialect]}" for c in table.columns]
    cols += [
        f"raw {_TYPES['json'][dialect]} NOT NULL",
        f"synced_at {_TYPES['time'][dialect]} NOT NULL",
    ]
    if table.deletes:
        cols.append(f"deleted_at {_TYPES['time'][dialect]}")
    if org:
        cols += [f"organization_id {text} NOT NULL", "PRIMARY KEY (organization_id, id)"]
    return f"CREATE TABLE {name or table.name} ({', '.join(cols)})"


_INDEXES = (
    "CREATE INDEX events_time ON events (time)",
    "CREATE INDEX contacts_modified ON contacts (modified)",
)


def _checkpoints(dialect: Dialect, name: str, key: str) -> str:
    t = _TYPES
    return (
        f"CREATE TABLE {name} (name {t['text'][dialect]} {key}, "
        f"value {t['text'][dialect]} NOT NULL, updated_at {t['time'][dialect]} NOT NULL"
    )


def _dead_letters(dialect: Dialect, name: str) -> str:
    t = _TYPES
    serial = "bigserial PRIMARY KEY" if dialect == "postgresql" else "INTEGER PRIMARY KEY"
    return (
        f"CREATE TABLE {name} (id {serial}, "
        f"resource {t['text'][dialect]} NOT NULL, record_id {t['text'][dialect]}, "
        f"digest {t['text'][dialect]} NOT NULL, error {t['text'][dialect]} NOT NULL, "
        f"raw {t['bytes'][dialect]} NOT NULL, first_seen {t['time'][dialect]} NOT NULL"
    )


def _v1(dialect: Dialect, organization: str) -> list[str]:
    return [
        *(_create(table, dialect) for table in TABLES.values()),
        *_INDEXES,
        _checkpoints(dialect, "sync_checkpoints", "PRIMARY KEY") + ")",
        _dead_letters(dialect, "sync_dead_letters") + ", UNIQUE (resource, digest))",
    ]


def _v2(dialect: Dialect, organization: str) -> list[str]:
    """Organizations (module docstring): every row so far is ``organization``'s.
    PostgreSQL alters its tables in place; SQLite, which cannot change a key, copies each
    table into a new one of the new key."""
    org = _literal(organization)
    text, time = _TYPES["text"][dialect], _TYPES["time"][dialect]
    leases = (
        f"CREATE TABLE sync_leases (organization_id {text} PRIMARY KEY, "
        f"token {_TYPES['int'][dialect]} NOT NULL, holder {text} NOT NULL, "
        f"taken_at {time} NOT NULL)"
    )
    keys = {**dict.fromkeys(TABLES, "id"), "sync_checkpoints": "name"}
    if dialect == "postgresql":
        out = []
        for table in _OWNED:
            out += [
                f"ALTER TABLE {table} ADD COLUMN organization_id text NOT NULL DEFAULT {org}",
                f"ALTER TABLE {table} ALTER COLUMN organization_id DROP DEFAULT",
            ]
            if table in keys:
                out.append(
                    f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey, "
                    f"ADD PRIMARY KEY (organization_id, {keys[table]})"
                )
        out.append(
            "ALTER TABLE sync_dead_letters DROP CONSTRAINT sync_dead_letters_resource_digest_key, "
            "ADD UNIQUE (organization_id, resource, digest)"
        )
        return [*out, leases]
    new = {
        **{t: _create(TABLES[t], dialect, name=f"{t}_v2", org=True) for t in TABLES},
        "sync_checkpoints": _checkpoints(dialect, "sync_checkpoints_v2", "NOT NULL")
        + f", organization_id {text} NOT NULL, PRIMARY KEY (organization_id, name))",
        "sync_dead_letters": _dead_letters(dialect, "sync_dead_letters_v2")
        + f", organization_id {text} NOT NULL, UNIQUE (organization_id, resource, digest))",
    }
    out = []
    for table, create in new.items():
        out += [
            create,
            f"INSERT INTO {table}_v2 SELECT *, {org} FROM {table}",
            f"DROP TABLE {table}",
            f"ALTER TABLE {table}_v2 RENAME TO {table}",
        ]
    return [*out, *_INDEXES, leases]


def _v3(dialect: Dialect, organization: str) -> list[str]:
    """Suppressions (``_erasure``): the keyed hashes of erased contacts' ids, emails and
    phones, which every later write consults."""
    text, time = _TYPES["text"][dialect], _TYPES["time"][dialect]
    return [
        f"CREATE TABLE sync_suppressions (organization_id {text} NOT NULL, "
        f"hash {text} NOT NULL, kind {text} NOT NULL, method {text} NOT NULL, "
        f"key_id {text} NOT NULL, erased_at {time} NOT NULL, "
        "PRIMARY KEY (organization_id, hash))"
    ]


def lease_sql(p: tuple[str, ...]) -> tuple[str, str]:
    """Taking a lease (one more than the last token, or 1) and reading its token, in a
    dialect's placeholders ``p``: the organization, the holder, the time."""
    take = (
        f"INSERT INTO sync_leases VALUES ({p[0]}, 1, {p[1]}, {p[2]}) "
        "ON CONFLICT (organization_id) DO UPDATE SET token = sync_leases.token + 1, "
        "holder = excluded.holder, taken_at = excluded.taken_at RETURNING token"
    )
    return take, f"SELECT token FROM sync_leases WHERE organization_id = {p[0]}"


def claim_sql(p: tuple[str, ...]) -> tuple[str, str, str]:
    """A sync's claim on its organization (``_lease``), in a dialect's placeholders ``p``:
    taking the lease unless another holder stamped it after a cutoff (the organization,
    the holder, the time, the cutoff, a holder known dead or NULL; no row returned: held),
    reading who holds it and when it was stamped, and stamping it (the organization, the
    time, our token)."""
    claim = (
        f"INSERT INTO sync_leases VALUES ({p[0]}, 1, {p[1]}, {p[2]}) "
        "ON CONFLICT (organization_id) DO UPDATE SET token = sync_leases.token + 1, "
        "holder = excluded.holder, taken_at = excluded.taken_at "
        f"WHERE sync_leases.taken_at < {p[3]} OR sync_leases.holder = {p[1]} "
        f"OR sync_leases.holder = {p[4]} RETURNING token"
    )
    who = f"SELECT holder, taken_at FROM sync_leases WHERE organization_id = {p[0]}"
    stamp = (
        f"UPDATE sync_leases SET taken_at = {p[1]} WHERE organization_id = {p[0]} "
        f"AND token = {p[2]}"
    )
    return claim, who, stamp


def lease_lock_key(organization: str) -> int:
    """The key of an organization's sync lock in PostgreSQL (a session advisory lock,
    ``_lease``): 64 bits of a hash of its id."""
    digest = hashlib.sha256(b"asyncwifi sync lease\0" + organization.encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


#: the schema steps: ``STEPS[i](dialect, organization)`` takes a database from version ``i``
#: to ``i + 1`` (``organization``: whose rows a database of version 1 held, see ``_v2``)
STEPS: tuple[Callable[[Dialect, str], list[str]], ...] = (_v1, _v2, _v3)

#: PostgreSQL's versions applied (one row each); in SQLite, the scheme before user_version
MIGRATIONS_TABLE = "schema_migrations"
