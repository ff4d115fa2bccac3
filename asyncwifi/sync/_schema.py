"""The tables a sync writes, their typed columns, and the versioned migrations.

Each resource table has the record's id as primary key ``id`` (for events whichever shape
the server sent: the :class:`~asyncwifi.Event` accessor), the server's exact record in
``raw`` (``jsonb`` in PostgreSQL, the exact text in SQLite), typed columns for the fields
people query, ``synced_at``, and ``deleted_at`` where deletes apply (events are never
deleted). ``sync_checkpoints`` holds each feed's checkpoint; ``sync_dead_letters`` the
records that could not be stored as such, with their raw bytes. ``schema_migrations``
records the versions applied: a migration runs once, in a transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from asyncwifi._instant import utc_time
from asyncwifi.models import Contact, Event, Hotspot, Segment

__all__ = ["MIGRATIONS", "TABLES", "Column", "Dialect", "Table", "migrations_for"]

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
# the models each table decodes (documentation; mypy checks the lambdas through them)
MODELS: dict[str, type[Any]] = {
    "events": Event,
    "contacts": Contact,
    "hotspots": Hotspot,
    "segments": Segment,
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


#: version -> the statements of that migration, per dialect
MIGRATIONS: dict[int, Callable[[Dialect], list[str]]] = {1: _v1}

MIGRATIONS_TABLE = "schema_migrations"


def migrations_for(dialect: Dialect, applied: Sequence[int]) -> list[tuple[int, list[str]]]:
    """The migrations not applied yet, in version order."""
    done = set(applied)
    return [(v, MIGRATIONS[v](dialect)) for v in sorted(MIGRATIONS) if v not in done]
