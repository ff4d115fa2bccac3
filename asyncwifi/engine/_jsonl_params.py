"""What a state file is bound to (:class:`JobParams`) and what it says (:class:`StateInfo`),
read without changing it.

A state file is SQLite in WAL mode: after a crash or a full disk its last commits may be in
its ``-wal`` only (a checkpoint into the main file cut short leaves the main file alone
unreadable). It is read as SQLite reads it, the ``-wal`` included (``mode=ro``: the database
and its ``-wal`` are never written; SQLite may create the ``-shm`` index beside them if a
crash left the ``-wal`` without it); a state closed cleanly has no ``-wal`` and is opened
``immutable``, which creates nothing.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.request import pathname2url

import msgspec

from asyncwifi.engine._destination import StateMismatchError
from asyncwifi.engine._jsonl_schema import DONE, MIGRATIONS, part_name
from asyncwifi.errors import SchemaVersionError

__all__ = [
    "JobParams",
    "StateInfo",
    "check_readable",
    "diff_params",
    "read_only_uri",
    "read_state",
    "state_exists",
]

_SQLITE_MAGIC = b"SQLite format 3\x00"


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
    #: the PII policy the lines were written under (``PiiPolicy.describe``; None: none)
    pii: str | None = None

    def describe(self) -> str:
        """A short human description, for error messages."""
        fields = msgspec.structs.asdict(self)
        return ", ".join(f"{k}={_show(k, v)}" for k, v in fields.items() if v is not None)

    def part(self, index: int) -> str:
        """The checkpoint name of part ``index`` (a slice; the contact scan is one part)."""
        return part_name(self.kind == "events", index)


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
        return diff_params(self.params, wanted)


def read_only_uri(path: Path) -> str:
    """The URI that reads ``path`` as SQLite does without writing it (module docstring)."""
    uri = "file:" + pathname2url(str(path.resolve()))
    if Path(f"{path}-wal").exists():
        return uri + "?mode=ro"
    return uri + "?mode=ro&immutable=1"


def check_readable(path: Path) -> None:
    """Refuse a state file that SQLite cannot read (``StateMismatchError``: corrupt, not
    missing, so that a job never starts over beside it); a bare or empty file is no state."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    with path.open("rb") as fh:
        head = fh.read(len(_SQLITE_MAGIC))
    reason = "not an SQLite database"
    if head == _SQLITE_MAGIC:
        try:
            conn = sqlite3.connect(read_only_uri(path), uri=True)
            try:
                conn.execute("SELECT name FROM sqlite_master").fetchall()
            finally:
                conn.close()
            return
        except sqlite3.DatabaseError as exc:
            reason = str(exc)
    raise StateMismatchError(
        f"state file {path} is corrupt ({reason}): move it away, or pass another --state"
    )


def state_exists(path: Path) -> bool:
    """Whether ``path`` holds an initialised state (a bare or empty file does not count)."""
    if not path.exists() or path.stat().st_size == 0:
        return False
    try:
        conn = sqlite3.connect(read_only_uri(path), uri=True)
    except sqlite3.Error:
        return False
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'params'").fetchone()
    except sqlite3.Error:
        return False
    finally:
        conn.close()
    return row is not None


def read_state(path: Path) -> StateInfo:
    """Read what a state file says without changing it (for checks and dry runs)."""
    conn = sqlite3.connect(read_only_uri(path), uri=True)
    try:
        found = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if found > len(MIGRATIONS):
            raise SchemaVersionError(f"state file {path}", found=found, supported=len(MIGRATIONS))
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if found < len(MIGRATIONS):  # written by 0.x: counted as it counted
            total, done = conn.execute("SELECT COUNT(*), SUM(done) FROM slices").fetchone()
        else:
            done = conn.execute(
                "SELECT COUNT(*) FROM checkpoints WHERE value = ?", (DONE,)
            ).fetchone()[0]
            total = int(meta.get("parts", 1))
    finally:
        conn.close()
    return StateInfo(
        params=msgspec.json.decode(str(meta["params"]).encode(), type=JobParams),
        version=found,
        offset=int(meta.get("offset", 0)),
        records=int(meta.get("records", 0)),
        done=meta.get("done") == "1",
        slices_total=int(total),
        slices_done=int(done or 0),
    )


def diff_params(stored: JobParams, wanted: JobParams) -> str:
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
