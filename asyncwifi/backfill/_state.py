"""The job's state file: a small SQLite database (WAL) that makes a backfill resumable.

One transaction per committed page records the output's new length, the slice's progress
and the ids it delivered. The output bytes are written and fsync'ed *before* that
transaction, so after a kill at any moment the state describes a prefix of the output:
truncating the output to the committed length and resuming each unfinished slice while
skipping its delivered ids writes every record exactly once.

The state also pins the job's parameters (kind, range, types, output, compression, slice
size): resuming with different ones is refused, since the committed prefix would not match.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.request import pathname2url

import msgspec

from asyncwifi._instant import read_instant
from asyncwifi._sqlite import migrate, statements
from asyncwifi.backfill._errors import StateMismatchError
from asyncwifi.backfill._plan import Slice
from asyncwifi.errors import SchemaVersionError

__all__ = ["JobParams", "PageCommit", "SliceState", "StateInfo", "StateStore"]

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS slices (
    idx INTEGER PRIMARY KEY,
    start_at TEXT NOT NULL,
    end_at TEXT NOT NULL,
    done INTEGER NOT NULL DEFAULT 0,
    records INTEGER NOT NULL DEFAULT 0,
    pages INTEGER NOT NULL DEFAULT 0,
    cursor TEXT,
    ordered INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS delivered (slice INTEGER NOT NULL, ids BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS delivered_slice ON delivered (slice);
CREATE TABLE IF NOT EXISTS boundary (id TEXT PRIMARY KEY);
"""

#: the file's schema by ``PRAGMA user_version`` (see ``_sqlite.migrate``): step ``i`` takes
#: a file from version ``i`` to ``i + 1``. Version 0 is a new file or one written before the
#: file carried a version (its tables already exist: the step's IF NOT EXISTS keeps them)
_MIGRATIONS = (statements(_SCHEMA),)


class JobParams(msgspec.Struct, frozen=True, kw_only=True):
    """What a state file is bound to; a restart must ask for exactly the same job."""

    kind: str
    out: str
    gzip: bool = False
    since: str | None = None
    until: str | None = None
    types: tuple[str, ...] | None = None
    slice_seconds: int | None = None
    has_email: bool | None = None

    def describe(self) -> str:
        """A short human description, for error messages."""
        fields = msgspec.structs.asdict(self)
        return ", ".join(f"{k}={_show(k, v)}" for k, v in fields.items() if v is not None)


@dataclass(slots=True)
class SliceState:
    """A slice and its committed progress."""

    index: int
    start: datetime
    end: datetime
    done: bool = False
    records: int = 0
    pages: int = 0
    #: the latest record date committed in the slice (a sortable UTC key), if any
    cursor: str | None = None
    #: whether every committed record came in non-decreasing date order
    ordered: bool = True

    @property
    def slice(self) -> Slice:
        return Slice(self.index, self.start, self.end)


@dataclass(frozen=True, slots=True)
class PageCommit:
    """One page of a group commit: its slice, what it delivered, and the slice's cursor."""

    index: int
    ids: Sequence[str]
    cursor: str | None
    ordered: bool
    requests: int
    boundary_ids: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class StateInfo:
    """A read-only summary of a state file."""

    params: JobParams
    version: int
    offset: int
    records: int
    done: bool
    slices_total: int
    slices_done: int

    def diff(self, wanted: JobParams) -> str:
        """How ``wanted`` differs from the job this state belongs to."""
        return _diff(self.params, wanted)


_ids_encoder = msgspec.json.Encoder()
_ids_decoder = msgspec.json.Decoder(list[str])


class StateStore:
    """The SQLite state of one job. Not thread-safe: the engine serialises every call."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self._conn = conn

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def exists(cls, path: Path) -> bool:
        """Whether ``path`` holds an initialised state (a bare or empty file does not count)."""
        if not path.exists() or path.stat().st_size == 0:
            return False
        try:
            conn = sqlite3.connect(_read_only_uri(path), uri=True)
        except sqlite3.Error:
            return False
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'params'").fetchone()
        except sqlite3.Error:
            return False
        finally:
            conn.close()
        return row is not None

    @classmethod
    def read_only(cls, path: Path) -> StateInfo:
        """Read what a state file says without changing it (for checks and dry runs)."""
        conn = sqlite3.connect(_read_only_uri(path), uri=True)
        try:
            found = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if found > len(_MIGRATIONS):
                raise SchemaVersionError(
                    f"state file {path}", found=found, supported=len(_MIGRATIONS)
                )
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            total, done = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(done), 0) FROM slices"
            ).fetchone()
        finally:
            conn.close()
        return StateInfo(
            params=msgspec.json.decode(str(meta["params"]).encode(), type=JobParams),
            version=int(meta.get("version", 0)),
            offset=int(meta.get("offset", 0)),
            records=int(meta.get("records", 0)),
            done=meta.get("done") == "1",
            slices_total=int(total),
            slices_done=int(done),
        )

    @classmethod
    def open(
        cls, path: Path, params: JobParams, *, slices: Sequence[Slice] = ()
    ) -> tuple[StateStore, bool]:
        """Open (creating if needed) the state at ``path`` for ``params``.

        Returns the store and whether it was just created. Raises
        :class:`StateMismatchError` when the file belongs to another job.
        """
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: a kill never loses a commit (it is in the OS's cache); a power
            # loss may lose the last ones, which only rolls the job back to an earlier
            # consistent point (the output is fsync'ed *before* each commit, so the state
            # never claims bytes the disk does not have): exactly once either way, without
            # an fsync of the WAL per page
            conn.execute("PRAGMA synchronous=NORMAL")
            migrate(conn, _MIGRATIONS, what=f"state file {path}")
            store = cls(path, conn)
            existing = store._meta("params")
            if existing is None:
                store._initialise(params, slices)
                return store, True
            version = int(store._meta("version") or 0)
            if version != SCHEMA_VERSION:
                raise StateMismatchError(
                    f"state file {path} has format {version}; "
                    f"this asyncwifi writes {SCHEMA_VERSION}"
                )
            stored = msgspec.json.decode(existing.encode(), type=JobParams)
            if stored != params:
                raise StateMismatchError(
                    f"state file {path} belongs to another job ({_diff(stored, params)}); "
                    "use the same options, or another --state"
                )
            return store, False
        except BaseException:
            conn.close()
            raise

    def _initialise(self, params: JobParams, slices: Sequence[Slice]) -> None:
        with self._transaction() as cur:
            cur.execute(
                "INSERT INTO meta VALUES ('params', ?), ('version', ?), ('offset', '0'),"
                " ('records', '0'), ('requests', '0'), ('done', '0')",
                (msgspec.json.encode(params).decode(), str(SCHEMA_VERSION)),
            )
            cur.executemany(
                "INSERT INTO slices (idx, start_at, end_at) VALUES (?, ?, ?)",
                [(s.index, s.start.isoformat(), s.end.isoformat()) for s in slices],
            )

    @property
    def connection(self) -> sqlite3.Connection:
        """The state's connection (its owner, the engine's SQLite thread, closes it)."""
        return self._conn

    def close(self) -> None:
        self._conn.close()

    # -- reading ---------------------------------------------------------------------------

    def _meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    @property
    def offset(self) -> int:
        """Length of the output that is committed (bytes)."""
        return int(self._meta("offset") or 0)

    @property
    def records(self) -> int:
        """Records committed so far, over every run."""
        return int(self._meta("records") or 0)

    @property
    def requests(self) -> int:
        """Requests spent by committed work, over every run (an approximate count)."""
        return int(self._meta("requests") or 0)

    @property
    def done(self) -> bool:
        """Whether the whole job finished."""
        return self._meta("done") == "1"

    def slices(self) -> list[SliceState]:
        rows = self._conn.execute(
            "SELECT idx, start_at, end_at, done, records, pages, cursor, ordered"
            " FROM slices ORDER BY idx"
        ).fetchall()
        return [
            SliceState(
                index=int(r[0]),
                start=read_instant(r[1]),
                end=read_instant(r[2]),
                done=bool(r[3]),
                records=int(r[4]),
                pages=int(r[5]),
                cursor=r[6],
                ordered=bool(r[7]),
            )
            for r in rows
        ]

    def delivered_ids(self, index: int) -> set[str]:
        """The ids committed so far by the unfinished slice ``index``."""
        ids: set[str] = set()
        for (blob,) in self._conn.execute("SELECT ids FROM delivered WHERE slice = ?", (index,)):
            ids.update(_ids_decoder.decode(blob))
        return ids

    def seen_at_boundary(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` (records dated near a slice boundary) were already written."""
        wanted = list(ids)
        seen: set[str] = set()
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._conn.execute(f"SELECT id FROM boundary WHERE id IN ({marks})", chunk)
            seen.update(str(r[0]) for r in rows)
        return seen

    # -- writing ---------------------------------------------------------------------------

    def commit_pages(self, *, offset: int, pages: Sequence[PageCommit]) -> None:
        """Record pages written to the output (already flushed and fsync'ed) at once.

        One transaction for the whole group: the output's new length, and per page the
        slice's progress and the ids it delivered.
        """
        with self._transaction() as cur:
            cur.execute("UPDATE meta SET value = ? WHERE key = 'offset'", (str(offset),))
            cur.execute(
                "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = 'records'",
                (sum(len(p.ids) for p in pages),),
            )
            cur.execute(
                "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = 'requests'",
                (sum(p.requests for p in pages),),
            )
            for page in pages:
                cur.execute(
                    "UPDATE slices SET records = records + ?, pages = pages + 1, cursor = ?,"
                    " ordered = ? WHERE idx = ?",
                    (len(page.ids), page.cursor, int(page.ordered), page.index),
                )
                if page.ids:
                    cur.execute(
                        "INSERT INTO delivered (slice, ids) VALUES (?, ?)",
                        (page.index, _ids_encoder.encode(list(page.ids))),
                    )
                if page.boundary_ids:
                    cur.executemany(
                        "INSERT OR IGNORE INTO boundary (id) VALUES (?)",
                        [(i,) for i in page.boundary_ids],
                    )

    def add_requests(self, requests: int) -> None:
        """Count requests that produced no committed page (the empty page ending a scroll)."""
        if requests:
            with self._transaction() as cur:
                cur.execute(
                    "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = 'requests'",
                    (requests,),
                )

    def finish_slice(self, index: int, *, requests: int = 0) -> None:
        """Mark a slice complete; its delivered ids are no longer needed."""
        with self._transaction() as cur:
            cur.execute("UPDATE slices SET done = 1 WHERE idx = ?", (index,))
            cur.execute("DELETE FROM delivered WHERE slice = ?", (index,))
            cur.execute(
                "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = 'requests'",
                (requests,),
            )

    def mark_done(self) -> None:
        """Mark the whole job complete."""
        with self._transaction() as cur:
            cur.execute("UPDATE meta SET value = '1' WHERE key = 'done'")

    def _transaction(self) -> _Transaction:
        return _Transaction(self._conn)


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (or ``ROLLBACK`` on error)."""

    __slots__ = ("_conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __enter__(self) -> sqlite3.Cursor:
        self._conn.execute("BEGIN IMMEDIATE")
        return self._conn.cursor()

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self._conn.execute("COMMIT")
        else:
            self._conn.execute("ROLLBACK")


def _read_only_uri(path: Path) -> str:
    """A URI that reads ``path`` without creating anything next to it.

    A state closed cleanly has no ``-wal`` file and is opened ``immutable`` (SQLite then
    creates no ``-shm``/``-wal``); after a kill the ``-wal`` holds committed pages and must be
    read, so the files that already exist are used as they are.
    """
    uri = "file:" + pathname2url(str(path.resolve()))
    if Path(f"{path}-wal").exists():
        return uri + "?mode=ro"
    return uri + "?mode=ro&immutable=1"


def _diff(stored: JobParams, wanted: JobParams) -> str:
    a: dict[str, Any] = msgspec.structs.asdict(stored)
    b: dict[str, Any] = msgspec.structs.asdict(wanted)
    parts = [
        f"{k}: the state has {_show(k, a[k])}, this run asks {_show(k, b[k])}"
        for k in a
        if a[k] != b[k]
    ]
    return "; ".join(parts)


def _show(key: str, value: object) -> str:
    """A parameter as a user wrote it (``visit,login``, ``all``), not as a Python repr."""
    if value is None:
        return "all" if key == "types" else "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple | list):
        return ",".join(str(v) for v in value)
    return str(value)
