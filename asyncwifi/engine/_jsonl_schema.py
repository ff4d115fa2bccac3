"""The backfill state file's schema steps (``PRAGMA user_version``, ``_sqlite.migrate``):
version 1 is the per-slice state of 0.x; step 2 carries it over to checkpoints and ids."""

from __future__ import annotations

import sqlite3

import msgspec

from asyncwifi._cursor import TimeCursor
from asyncwifi._instant import floor_ms, read_instant
from asyncwifi._sqlite import statements

__all__ = ["DONE", "MIGRATIONS", "part_name"]

#: the checkpoint of a part (a slice, the contact scan) that finished
DONE = "done"

_V1 = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS slices (
    idx INTEGER PRIMARY KEY, start_at TEXT NOT NULL, end_at TEXT NOT NULL,
    done INTEGER NOT NULL DEFAULT 0, records INTEGER NOT NULL DEFAULT 0,
    pages INTEGER NOT NULL DEFAULT 0, cursor TEXT, ordered INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS delivered (slice INTEGER NOT NULL, ids BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS boundary (id TEXT PRIMARY KEY);
"""

_V2 = """
CREATE TABLE checkpoints (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE written (id TEXT PRIMARY KEY) WITHOUT ROWID
"""


def _v1_to_v2(conn: sqlite3.Connection) -> None:
    """Carry a state written by the per-slice engine over: each slice's cursor becomes its
    checkpoint (a slice that came in time order resumes at its cursor, any other from its
    start), and every delivered id is ``written`` (so nothing is written twice)."""
    statements(_V2)(conn)
    kind = conn.execute("SELECT value FROM meta WHERE key = 'params'").fetchone()
    events = kind is not None and msgspec.json.decode(kind[0])["kind"] == "events"
    rows = conn.execute("SELECT idx, start_at, done, cursor, ordered FROM slices")
    for idx, start, done, cursor, ordered in rows.fetchall():
        if done:
            value = DONE
        elif not events:
            continue
        else:
            at = read_instant(start)
            if ordered and cursor is not None:
                at = max(at, floor_ms(read_instant(cursor)))
            value = TimeCursor("events", at).encode()
        conn.execute("INSERT INTO checkpoints VALUES (?, ?)", (part_name(events, idx), value))
    for (blob,) in conn.execute("SELECT ids FROM delivered").fetchall():
        ids = msgspec.json.decode(blob, type=list[str])
        conn.executemany("INSERT OR IGNORE INTO written VALUES (?)", [(i,) for i in ids])
    conn.execute("INSERT OR IGNORE INTO written SELECT id FROM boundary")
    for table in ("slices", "delivered", "boundary"):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("DELETE FROM meta WHERE key = 'version'")  # PRAGMA user_version says it


def part_name(events: bool, index: int) -> str:
    """The checkpoint name of part ``index`` of an events job, or of the contact scan."""
    return f"events:{index}" if events else "contacts"


#: the file's schema by ``PRAGMA user_version`` (``_sqlite.migrate``, the one scheme of the
#: package's SQLite files): version 1 is the per-slice state of 0.x, carried over by step 2
MIGRATIONS = (statements(_V1), _v1_to_v2)
