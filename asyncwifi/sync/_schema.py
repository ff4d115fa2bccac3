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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from asyncwifi._instant import utc_time
from asyncwifi.models import Event

__all__ = ["MIGRATIONS_TABLE", "STEPS", "TABLES", "Column", "Dialect", "Table"]

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
        return f"ON CONFLICT (id) DO UPDATE SET {sets} WHERE {changed}"

    def select_ids(self, *, deleted: bool = False) -> str:
        """The query of the live ids (or those marked deleted)."""
        if not self.deletes:
            return f"SELECT id FROM {self.name}"
        return f"SELECT id FROM {self.name} WHERE deleted_at IS {'NOT ' if deleted else ''}NULL"


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


def _create(table: Table, dialect: Dialect) -> str:
    cols = [f"id {_TYPES['text'][dialect]} PRIMARY KEY"]
    cols += [f"{c.name} {_TYPES[c.kind][dialect]}" for c in table.columns]
    cols += [
        f"raw {_TYPES['json'][dialect]} NOT NULL",
        f"synced_at {_TYPES['time'][dialect]} NOT NULL",
    ]
    if table.deletes:
        cols.append(f"deleted_at {_TYPES['time'][dialect]}")
    return f"CREATE TABLE {table.name} ({', '.join(cols)})"


def _v1(dialect: Dialect) -> list[str]:
    t = _TYPES
    serial = "bigserial PRIMARY KEY" if dialect == "postgresql" else "INTEGER PRIMARY KEY"
    return [
        *(_create(table, dialect) for table in TABLES.values()),
        "CREATE INDEX events_time ON events (time)",
        "CREATE INDEX contacts_modified ON contacts (modified)",
        f"CREATE TABLE sync_checkpoints (name {t['text'][dialect]} PRIMARY KEY, "
        f"value {t['text'][dialect]} NOT NULL, updated_at {t['time'][dialect]} NOT NULL)",
        f"CREATE TABLE sync_dead_letters (id {serial}, "
        f"resource {t['text'][dialect]} NOT NULL, record_id {t['text'][dialect]}, "
        f"digest {t['text'][dialect]} NOT NULL, error {t['text'][dialect]} NOT NULL, "
        f"raw {t['bytes'][dialect]} NOT NULL, first_seen {t['time'][dialect]} NOT NULL, "
        "UNIQUE (resource, digest))",
    ]


#: the schema steps: ``STEPS[i](dialect)`` takes a database from version ``i`` to ``i + 1``
STEPS: tuple[Callable[[Dialect], list[str]], ...] = (_v1,)

#: PostgreSQL's versions applied (one row each); in SQLite, the scheme before user_version
MIGRATIONS_TABLE = "schema_migrations"
