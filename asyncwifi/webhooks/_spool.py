"""The durable spool: webhook events in a local SQLite file (WAL), written before the 2xx.

The connection lives on its own thread (:class:`~asyncwifi._sqlite.SqliteThread`), so
``sqlite3`` never blocks the event loop, in group-commit mode: under load, the concurrent
requests of one instant share a single commit, which is what lets durable mode acknowledge
>= 1,000 events/s with an ``fsync`` behind each commit.

``synchronous="FULL"`` (the default) syncs the WAL on every commit: an acknowledged event
survives a power loss or an OS crash. ``"NORMAL"`` syncs only at checkpoints: an event
survives the process being killed (the WAL is in the OS cache) but the last commits may
be lost if the machine itself goes down. See the benchmark for what each costs.

Tables: ``events`` (pending rows with their body; handled and dead rows keep only their
``nonce``, whose uniqueness de-duplicates across restarts until the row is pruned after
``retention``) and ``dead_letters`` (events whose handler kept failing, with body and last
error, kept until an operator requeues or deletes them). The schema's version is in
``PRAGMA user_version`` (:data:`SCHEMA_VERSION`): a spool from before versions (0) is
stamped 1 in place (same tables); one from a newer asyncwifi is refused
(:class:`~asyncwifi.errors.SchemaVersionError`), never guessed at.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final, Literal, TypeVar

import msgspec

from asyncwifi._sqlite import SqliteThread, Step, migrate, statements
from asyncwifi.errors import ClientStateError, ConfigurationError

if TYPE_CHECKING:
    from asyncwifi.engine import PiiPolicy

__all__ = ["SCHEMA_VERSION", "DeadLetter", "EventOutcome", "Spool", "SpooledEvent"]

_log = logging.getLogger("asyncwifi.webhooks")
_T = TypeVar("_T")

# events.state: 0 pending, 1 handled, 2 dead (moved to dead_letters)
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    nonce TEXT UNIQUE,
    type TEXT,
    body BLOB NOT NULL,
    headers BLOB NOT NULL,
    received_at REAL NOT NULL,
    state INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL,
    last_error TEXT,
    settled_at REAL
);
CREATE INDEX IF NOT EXISTS events_pending ON events (id) WHERE state = 0;
CREATE INDEX IF NOT EXISTS events_settled ON events (settled_at) WHERE state != 0;
CREATE TABLE IF NOT EXISTS dead_letters (
    id INTEGER PRIMARY KEY,
    nonce TEXT,
    type TEXT,
    body BLOB NOT NULL,
    headers BLOB NOT NULL,
    received_at REAL NOT NULL,
    attempts INTEGER NOT NULL,
    last_error TEXT,
    failed_at REAL NOT NULL
);
"""

#: ``_STEPS[i]`` takes a spool from schema version i to i + 1. Version 0 is a new file or
#: one written before versions: the same tables, which ``CREATE ... IF NOT EXISTS`` keeps.
_STEPS: Final[tuple[Step, ...]] = (statements(_SCHEMA),)
#: the schema version this release writes (``PRAGMA user_version``)
SCHEMA_VERSION: Final = len(_STEPS)

_HEADERS_ENCODER: Final = msgspec.json.Encoder()
_HEADERS_DECODER: Final = msgspec.json.Decoder(dict[str, str])


@dataclass(frozen=True, slots=True)
class SpooledEvent:
    """An event claimed from the spool for delivery to the handlers."""

    id: int
    nonce: str | None
    type: str | None
    body: bytes
    headers: dict[str, str]
    received_at: float
    #: this delivery's number (1 = first); counted durably before the handler runs
    attempt: int


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """An event moved aside after its handler failed ``attempts`` times."""

    id: int
    nonce: str | None
    type: str | None
    body: bytes
    headers: dict[str, str]
    received_at: float
    attempts: int
    last_error: str | None
    failed_at: float


@dataclass(frozen=True, slots=True)
class EventOutcome:
    """What became of one claimed event: ``handled``, ``retry`` at ``at``, ``dead``, or
    ``unclaimed`` (never handed to a handler: its attempt count is taken back)."""

    id: int
    kind: Literal["handled", "retry", "dead", "unclaimed"]
    at: float
    error: str | None = None


class Spool:
    """A SQLite spool of webhook events, driven from asyncio through one writer thread.

    ``open()`` before use (creates the file and tables, enables WAL), ``close()`` after; both
    are idempotent. One process at a time may open a spool (a lock file next to it says
    so; a second ``open()`` raises ``ConfigurationError``). ``max_batch`` bounds how many
    jobs share one commit. ``pii``: the PII policy (``asyncwifi.engine.PiiPolicy``, issue 41)
    applied to each body before it lands: the spool, its WAL and its dead letters never
    hold the plain fields, and the handlers receive the scrubbed event.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        retention: float = 3600.0,
        max_batch: int = 1024,
        pii: PiiPolicy | None = None,
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise ConfigurationError(f"synchronous must be 'FULL' or 'NORMAL', got {synchronous!r}")
        #: the SQLite file
        self.path = Path(path)
        #: the durability of a commit (see the module docstring)
        self.synchronous = synchronous
        #: seconds a settled event's nonce stays in ``events`` to refuse redeliveries
        #: (its body is dropped once handled); keep it >= the de-duplication TTL
        self.retention = float(retention)
        self.max_batch = max_batch
        self.pii = pii
        self._lock_file: IO[bytes] | None = None
        self._db = SqliteThread(
            self._connect,
            name="asyncwifi-webhook-spool",
            group_commit=True,
            max_batch=max_batch,
            on_close=self._unlock,
        )

    def __repr__(self) -> str:
        state = "open" if self._db.running else "closed"
        return f"Spool({str(self.path)!r}, synchronous={self.synchronous!r}, {state})"

    # -- lifecycle --------------------------------------------------------------------------

    async def open(self) -> None:
        """Start the writer thread, create or migrate the file; recover nothing lost."""
        await self._db.start()

    async def close(self) -> None:
        """Finish the queued jobs, stop the thread and close the connection."""
        await self._db.close()

    async def __aenter__(self) -> Spool:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _lock(self) -> IO[bytes] | None:
        """Hold ``<spool>.lock`` exclusively: two dispatchers on one spool would both claim
        the same events. The kernel releases it when the process dies, even by SIGKILL."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock
            return None
        lock = open(self.path.with_name(self.path.name + ".lock"), "ab")  # noqa: SIM115
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            raise ConfigurationError(
                f"the webhook spool {str(self.path)!r} is in use by another process"
            ) from None
        return lock

    def _connect(self) -> sqlite3.Connection:
        """On the writer thread: lock, open, set the pragmas, migrate the schema."""
        self._lock_file = self._lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            conn.execute("PRAGMA busy_timeout=5000")
            migrate(conn, _STEPS, what=f"the webhook spool {str(self.path)!r}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _unlock(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    def _submit(self, fn: Callable[[sqlite3.Connection], _T]) -> Awaitable[_T]:
        if not self._db.running:
            raise ClientStateError("the spool is not open")
        return self._db.submit(fn)

    # -- the operations ---------------------------------------------------------------------

    async def put(
        self,
        *,
        nonce: str | None,
        type: str | None,
        body: bytes,
        headers: Mapping[str, str],
        received_at: float,
    ) -> int | None:
        """Store an event durably (under the PII policy); its id, or ``None`` if its nonce
        is already spooled."""
        encoded = _HEADERS_ENCODER.encode(headers)
        if self.pii:
            body = self.pii.scrub(body)

        def insert(conn: sqlite3.Connection) -> int | None:
            cursor = conn.execute(
                "INSERT OR IGNORE INTO events"
                " (nonce, type, body, headers, received_at, next_attempt_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (nonce, type, body, encoded, received_at, received_at),
            )
            return cursor.lastrowid if cursor.rowcount == 1 else None

        return await self._submit(insert)

    async def settle_and_claim(
        self,
        outcomes: Sequence[EventOutcome],
        *,
        now: float,
        limit: int,
        prune: bool = False,
    ) -> tuple[list[SpooledEvent], float | None]:
        """Record ``outcomes``, then claim up to ``limit`` due events, in one commit.

        A claimed event's attempt count is raised in the same commit, before any handler
        sees it: so a delivery numbered 1 is certainly the first. Also returns the time the
        next pending event falls due (``None`` if none is pending).
        """
        retention = self.retention

        def run(conn: sqlite3.Connection) -> tuple[list[SpooledEvent], float | None]:
            _settle(conn, outcomes)
            if prune:
                conn.execute(
                    "DELETE FROM events WHERE state != 0 AND settled_at < ?", (now - retention,)
                )
            rows = conn.execute(
                "SELECT id, nonce, type, body, headers, received_at, attempts FROM events"
                " WHERE state = 0 AND next_attempt_at <= ? ORDER BY id LIMIT ?",
                (now, limit),
            ).fetchall()
            if rows:
                conn.executemany(
                    "UPDATE events SET attempts = attempts + 1 WHERE id = ?",
                    [(row[0],) for row in rows],
                )
            claimed = [
                SpooledEvent(
                    id=row[0],
                    nonce=row[1],
                    type=row[2],
                    body=bytes(row[3]),
                    headers=_HEADERS_DECODER.decode(row[4]),
                    received_at=row[5],
                    attempt=row[6] + 1,
                )
                for row in rows
            ]
            if len(rows) < limit:
                next_due = conn.execute(
                    "SELECT MIN(next_attempt_at) FROM events"
                    " WHERE state = 0 AND next_attempt_at > ?",
                    (now,),
                ).fetchone()[0]
            else:
                next_due = now
            return claimed, next_due

        return await self._submit(run)

    async def counts(self) -> dict[str, int]:
        """How many events wait for a handler (``pending``) and how many are dead letters.

        Cheap (an index range and a small table), so a health check may call it often.
        """

        def run(conn: sqlite3.Connection) -> dict[str, int]:
            pending = conn.execute("SELECT COUNT(*) FROM events WHERE state = 0").fetchone()[0]
            dead = conn.execute("SELECT COUNT(*) FROM dead_letters").fetchone()[0]
            return {"pending": pending, "dead_letters": dead}

        return await self._submit(run)

    async def dead_letters(self, *, limit: int = 100) -> list[DeadLetter]:
        """The oldest ``limit`` dead letters."""

        def run(conn: sqlite3.Connection) -> list[DeadLetter]:
            rows = conn.execute(
                "SELECT id, nonce, type, body, headers, received_at, attempts, last_error,"
                " failed_at FROM dead_letters ORDER BY id LIMIT ?",
                (limit,),
            ).fetchall()
            return [
                DeadLetter(
                    id=r[0],
                    nonce=r[1],
                    type=r[2],
                    body=bytes(r[3]),
                    headers=_HEADERS_DECODER.decode(r[4]),
                    received_at=r[5],
                    attempts=r[6],
                    last_error=r[7],
                    failed_at=r[8],
                )
                for r in rows
            ]

        return await self._submit(run)

    async def requeue_dead_letters(self, ids: Sequence[int] | None = None, *, now: float) -> int:
        """Move dead letters (all, or ``ids``) back to pending with a fresh attempt count.

        The running dispatcher picks them up at its next wake-up (a new event, a retry
        falling due, or :meth:`Dispatcher.notify`).
        """

        def run(conn: sqlite3.Connection) -> int:
            if ids is None:
                selected = [r[0] for r in conn.execute("SELECT id FROM dead_letters")]
            else:
                selected = list(ids)
            moved = 0
            for event_id in selected:
                cursor = conn.execute(
                    "UPDATE events SET state = 0, attempts = 0, next_attempt_at = ?,"
                    " settled_at = NULL, body = (SELECT body FROM dead_letters WHERE id = ?)"
                    " WHERE id = ? AND EXISTS (SELECT 1 FROM dead_letters WHERE id = ?)",
                    (now, event_id, event_id, event_id),
                )
                if cursor.rowcount == 0:
                    # The events row was pruned: re-create it from the dead letter.
                    cursor = conn.execute(
                        "INSERT OR IGNORE INTO events (id, nonce, type, body, headers,"
                        " received_at, next_attempt_at) SELECT id, nonce, type, body, headers,"
                        " received_at, ? FROM dead_letters WHERE id = ?",
                        (now, event_id),
                    )
                if cursor.rowcount:
                    conn.execute("DELETE FROM dead_letters WHERE id = ?", (event_id,))
                    moved += 1
            return moved

        return await self._submit(run)


def _settle(conn: sqlite3.Connection, outcomes: Sequence[EventOutcome]) -> None:
    handled = [(o.at, o.id) for o in outcomes if o.kind == "handled"]
    if handled:
        conn.executemany(
            "UPDATE events SET state = 1, settled_at = ?, last_error = NULL, body = X'',"
            " headers = X'' WHERE id = ?",
            handled,
        )
    retries = [(o.at, o.error, o.id) for o in outcomes if o.kind == "retry"]
    if retries:
        conn.executemany(
            "UPDATE events SET next_attempt_at = ?, last_error = ? WHERE id = ?", retries
        )
    unclaimed = [(o.id,) for o in outcomes if o.kind == "unclaimed"]
    if unclaimed:
        conn.executemany("UPDATE events SET attempts = attempts - 1 WHERE id = ?", unclaimed)
    for o in outcomes:
        if o.kind != "dead":
            continue
        conn.execute(
            "INSERT OR REPLACE INTO dead_letters (id, nonce, type, body, headers, received_at,"
            " attempts, last_error, failed_at) SELECT id, nonce, type, body, headers,"
            " received_at, attempts, ?, ? FROM events WHERE id = ?",
            (o.error, o.at, o.id),
        )
        # The row stays (state 2, no body) so that its nonce still de-duplicates.
        conn.execute(
            "UPDATE events SET state = 2, settled_at = ?, last_error = ?, body = X'' WHERE id = ?",
            (o.at, o.error, o.id),
        )
    if any(o.kind == "dead" for o in outcomes):
        _log.warning(
            "webhook events moved to the dead-letter table: %s",
            [o.id for o in outcomes if o.kind == "dead"],
        )
