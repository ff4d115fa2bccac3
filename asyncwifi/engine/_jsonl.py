"""The JSON Lines destination: an output file and its state file, one :class:`Destination`.

A batch is written like any destination writes it (``Destination.write``: its records and its
checkpoints in one transaction), here as lines of the server's own bytes appended to the
output, fsync'ed, and then, in one SQLite transaction of the state file, the output's new
length, the ids written (the primary key that makes a record written twice a no-op) and the
checkpoints. After a kill at any moment the state describes a prefix of the output: the
output is cut back to the committed length on open and the feeds resume from their
checkpoints, so every record is written exactly once.

Writes queued while one commits are committed together (one fsync, one transaction): the
slices of a backfill share their commits. The state also pins the job's parameters: a
resume with other options is refused, since the committed prefix would not match.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Awaitable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from asyncwifi._sqlite import SqliteThread, migrate
from asyncwifi.engine._destination import Destination, StateMismatchError, Write
from asyncwifi.engine._feeds import Batch
from asyncwifi.engine._jsonl_output import JsonlOutput, RawRecord
from asyncwifi.engine._jsonl_params import (
    JobParams,
    StateInfo,
    diff_params,
    read_state,
    state_exists,
)
from asyncwifi.engine._jsonl_preflight import preflight
from asyncwifi.engine._jsonl_schema import DONE, MIGRATIONS
from asyncwifi.engine._lockfile import ProcessLock
from asyncwifi.errors import ClientStateError
from asyncwifi.models import record_ids

__all__ = ["DONE", "JobParams", "JsonlDestination", "StateInfo", "output_lock"]


def output_lock(out: Path, kind: str) -> ProcessLock:
    """What makes one job at a time write ``out``: an OS lock on ``OUT.lock`` that dies with
    its holder (``asyncwifi.engine._lockfile``); ``kind``: the job's (``JobParams.kind``)."""
    what = "an events backfill" if kind == "events" else "a contact export"
    return ProcessLock(out.with_name(out.name + ".lock"), guarded=f"output {out}", what=what)


@dataclass(slots=True, eq=False)
class _Queued:
    write: Write
    future: asyncio.Future[int]


class JsonlDestination(Destination):
    """``out`` (JSON Lines, optionally gzip) and its state file ``path``: a sync destination
    (see the module docstring). ``parts`` is how many checkpoints the job has (slices),
    ``concurrency`` how many of them stream at once."""

    dialect = "jsonl"
    #: the checkpoint of a part (a slice, the contact scan) that finished
    DONE = DONE

    def __init__(
        self,
        path: Path,
        out: Path,
        params: JobParams,
        *,
        parts: int = 1,
        concurrency: int = 1,
        compresslevel: int = 6,
        fsync: bool = True,
    ) -> None:
        self.path = path
        self.out = out
        self.params = params
        self.parts = parts
        #: writes in flight at once (one per concurrent slice): they share commits, and
        #: a feed waits for its earlier pages' commit before it hands out more
        self.concurrency = concurrency
        self._output = JsonlOutput(out, gzip=params.gzip, compresslevel=compresslevel, fsync=fsync)
        #: one writer of ``out`` at a time, held from ``open`` to ``close``
        self._lock = output_lock(out, params.kind)
        self._bridge: SqliteThread | None = None
        self._queue: list[_Queued] = []
        self._committer: asyncio.Future[None] | None = None
        self._failed: BaseException | None = None
        #: whether the state existed (a resume), and what it held when opened
        self.resumed = False
        self.records = 0
        self.requests = 0
        #: records a write found already written (a resumed scan, a server repeating itself)
        self.repeats = 0

    def __repr__(self) -> str:
        return f"JsonlDestination({str(self.path)!r})"

    #: reading a state file without changing it (``_jsonl_params``), checking both files
    #: before anything is created or changed (``_jsonl_preflight``), and the lock that makes
    #: one job at a time write an output
    exists = staticmethod(state_exists)
    read_only = staticmethod(read_state)
    preflight = staticmethod(preflight)
    output_lock = staticmethod(output_lock)

    # -- the Destination ------------------------------------------------------------------------

    async def open(self) -> None:
        """Open (or create) the state and the output; refuse a state of another job, and an
        output another job writes (``LockHeldError``, naming it)."""
        if self._bridge is not None:
            return
        self._lock.acquire()  # first: nothing is read or changed under another writer
        self.resumed = JsonlDestination.exists(self.path)
        created = not self.path.exists()
        try:
            bridge = SqliteThread(self._connect, name="asyncwifi-backfill-state")
            await bridge.start()
            self._bridge = bridge
            meta = await self._run(lambda c: dict(c.execute("SELECT key, value FROM meta")))
            self.records, self.requests = int(meta["records"]), int(meta["requests"])
            self._output.open(int(meta["offset"]))
        except BaseException:
            try:
                await self._close_files()
                if created:  # a refused job leaves nothing behind
                    _remove(self.path)
            finally:
                self._lock.release()
            raise

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            # first: a file of a newer release is refused before anything changes in it
            migrate(conn, MIGRATIONS, what=f"state file {self.path}")
            conn.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: a kill never loses a commit; a power loss may lose the last ones,
            # which only rolls the job back to an earlier consistent point (the output is
            # fsync'ed before each commit, so the state never claims bytes the disk lacks)
            conn.execute("PRAGMA synchronous=NORMAL")
            row = conn.execute("SELECT value FROM meta WHERE key = 'params'").fetchone()
            if row is None:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(
                    "INSERT INTO meta VALUES (?, ?)",
                    [
                        ("params", msgspec.json.encode(self.params).decode()),
                        ("parts", str(self.parts)),
                        *((k, "0") for k in ("offset", "records", "requests", "done")),
                    ],
                )
                conn.execute("COMMIT")
            else:
                stored = msgspec.json.decode(row[0].encode(), type=JobParams)
                if stored != self.params:
                    raise StateMismatchError(
                        f"state file {self.path} belongs to another job "
                        f"({diff_params(stored, self.params)}); use the same options, or "
                        "another --state"
                    )
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('parts', ?)", (str(self.parts),))
        except BaseException:
            conn.close()
            raise
        return conn

    async def close(self) -> None:
        try:
            await self._close_files()
        finally:
            self._lock.release()  # last: the next writer finds every file closed

    async def _close_files(self) -> None:
        committer = self._committer
        if committer is not None and not committer.done():
            await asyncio.wait([committer])  # a commit in progress finishes first
        self._output.close()
        bridge, self._bridge = self._bridge, None
        if bridge is not None:
            await bridge.close()

    async def _run(self, fn: Any) -> Any:
        """``fn(conn)`` on the state's thread; once queued it completes, even if the caller
        is cancelled (a commit is never half done)."""
        if self._bridge is None:
            raise ClientStateError("the state file is not open")
        future = self._bridge.submit(fn)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            if not future.done():
                await asyncio.wait([future])
            raise

    async def checkpoint(self, name: str) -> str | None:
        row = await self._run(
            lambda c: c.execute("SELECT value FROM checkpoints WHERE name = ?", (name,)).fetchone()
        )
        return None if row is None else str(row[0])

    def rows(self, batch: Batch[Any]) -> list[Sequence[object]]:
        """A batch as ``(id, bytes)`` lines; records that did not decode are kept too (an
        export is lossless), named by the one rule (``asyncwifi.models._identity``)."""
        raws = batch.raws
        ids = batch.ids
        if ids is None:
            ids = record_ids(batch.items, raws)
        rows: list[Sequence[object]] = list(zip(ids, raws, strict=True))
        rows += [(bad.id, bad.raw) for bad in batch.bad]
        return rows

    async def write(self, write: Write, after: Awaitable[object] | None = None) -> int:
        """Queue ``write``; writes queued meanwhile share its commit, in queue order (so
        ``after``, queued earlier, is never committed later)."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        queued = _Queued(write, future)
        self._queue.append(queued)
        if self._committer is None or self._committer.done():
            self._committer = asyncio.ensure_future(self._commit_loop())
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            if queued in self._queue:
                self._queue.remove(queued)
                future.cancel()
            elif not future.done():
                await asyncio.wait([future])
            raise

    async def _commit_loop(self) -> None:
        while self._queue:
            group, self._queue = self._queue, []
            try:
                if self._failed is not None:
                    raise self._failed  # the same cause: that write is what failed
                counts = await self._run(lambda c, g=group: self._commit(c, [q.write for q in g]))
            except BaseException as exc:
                # nothing after a failed write may commit: its checkpoint would pass records
                # that were never written (the next run resumes from the last commit)
                self._failed = self._failed or exc
                if not isinstance(exc, Exception):  # the loop ends: nobody is left waiting
                    group, self._queue = group + self._queue, []
                for queued in group:
                    if not queued.future.done():
                        queued.future.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise
                continue
            for queued, count in zip(group, counts, strict=True):
                if not queued.future.done():
                    queued.future.set_result(count)

    def _commit(self, conn: sqlite3.Connection, writes: Sequence[Write]) -> list[int]:
        """Append the new lines, fsync once, then commit ids, length and checkpoints."""
        output = self._output
        before = output.offset
        conn.execute("BEGIN IMMEDIATE")
        try:
            counts: list[int] = []

            def chunks() -> Iterator[bytes]:
                # each page's lines encoded as the output takes them: one held at a time
                for write in writes:
                    fresh = _fresh(conn, write.rows)
                    self.repeats += len(write.rows) - len(fresh)
                    counts.append(len(fresh))
                    if fresh:
                        yield output.encode(fresh)

            if any(w.rows for w in writes):
                offset = output.append_many(chunks())
            else:
                offset = before
                counts.extend(0 for _ in writes)
            written = sum(counts)
            requests = sum(w.requests for w in writes)
            conn.executemany(
                "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = ?",
                [(written, "records"), (requests, "requests")],
            )
            conn.execute("UPDATE meta SET value = ? WHERE key = 'offset'", (str(offset),))
            conn.executemany(
                "INSERT OR REPLACE INTO checkpoints VALUES (?, ?)",
                [item for w in writes for item in w.checkpoints.items()],
            )
            conn.execute("COMMIT")
        except BaseException:
            # disk full, a SQLite error...: these bytes must not be counted by a later
            # commit; the records are fetched again by the next run
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            output.rollback(before)
            raise
        self.records += written
        self.requests += requests
        return counts

    async def mark_done(self) -> None:
        """The whole job finished: a run of the same job sends nothing."""
        await self._run(lambda c: c.execute("UPDATE meta SET value = '1' WHERE key = 'done'"))

    async def ids(self, table: str, *, deleted: bool = False) -> set[str]:
        if deleted:
            return set()
        found: set[str] = await self._run(
            lambda c: {str(r[0]) for r in c.execute("SELECT id FROM written")}
        )
        return found

    async def existing(self, table: str, ids: Sequence[str]) -> set[str]:
        found: set[str] = await self._run(lambda c: _existing(c, ids))
        return found

    async def count(self, table: str) -> int:
        return int(
            await self._run(lambda c: c.execute("SELECT COUNT(*) FROM written").fetchone()[0])
        )

    async def schema_version(self) -> int:
        return int(await self._run(lambda c: c.execute("PRAGMA user_version").fetchone()[0]))


_ids_json = msgspec.json.Encoder()


def _existing(conn: sqlite3.Connection, ids: Sequence[str]) -> set[str]:
    query = "SELECT id FROM written WHERE id IN (SELECT value FROM json_each(?))"
    return {str(r[0]) for r in conn.execute(query, (_ids_json.encode(list(ids)),))}


def _fresh(conn: sqlite3.Connection, rows: Sequence[Sequence[object]]) -> list[RawRecord]:
    """The lines of ``rows`` never written before (the first of a repeated id), their ids
    now written: in one statement when none was (the usual page)."""
    ids = [str(row[0]) for row in rows]
    raws: list[RawRecord] = [row[1] for row in rows]  # type: ignore[misc]
    if not ids:
        return []
    if len(set(ids)) == len(ids):
        with contextlib.suppress(sqlite3.IntegrityError):
            conn.execute(
                "INSERT INTO written SELECT value FROM json_each(?) ORDER BY value",
                (_ids_json.encode(ids),),
            )
            return raws
    taken = _existing(conn, ids)
    fresh: list[RawRecord] = []
    new: list[tuple[str]] = []
    for ident, raw in zip(ids, raws, strict=True):
        if ident not in taken:
            taken.add(ident)
            fresh.append(raw)
            new.append((ident,))
    conn.executemany("INSERT INTO written VALUES (?)", new)
    return fresh


def _remove(path: Path) -> None:
    """Remove a state file and SQLite's companions of it."""
    for extra in ("", "-wal", "-shm"):
        Path(f"{path}{extra}").unlink(missing_ok=True)
