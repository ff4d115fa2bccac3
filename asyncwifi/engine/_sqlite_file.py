"""What a SQLite file's failures mean for a sync, named so that the operator knows what to do.

Only a busy or locked database passes by itself (``DestinationUnavailableError``: the sync
waits). A full disk is an error (:class:`DestinationFullError`: a daemon waits for space, a
single pass ends); a folder or file that cannot be written, a file size limit (``ulimit
-f``: SQLite says "disk I/O error") or a disk that fails its writes cannot pass by waiting
(``DestinationNotWritableError``); a file that is not a sync database (another program's,
an export's state file) is a setting to fix (``ConfigurationError``), refused before
anything in it changes.
"""

from __future__ import annotations

import contextlib
import os
import resource
import sqlite3
import tempfile

from asyncwifi.engine._destination import (
    DestinationFullError,
    DestinationNotWritableError,
    DestinationUnavailableError,
)
from asyncwifi.engine._schema import MIGRATIONS_TABLE
from asyncwifi.errors import AsyncWifiError, ConfigurationError

__all__ = ["check_sync_database", "failure"]

# sqlite3.h primary result codes
_PERM, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 3, 8, 10, 11, 13, 14, 26
#: free bytes below which a write error is the disk being full
_NEARLY_FULL = 1 << 20
#: how much a write may add to a file (a WAL frame, a few pages)
_GROWTH = 1 << 16


def failure(exc: sqlite3.Error, path: str) -> AsyncWifiError:
    """What ``exc``, raised on the database ``path``, means (module docstring)."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if code == _FULL or (code == _IOERR and _free(path) < _NEARLY_FULL):
        return DestinationFullError(f"the disk of {path} is full ({exc})", path)
    if code == _IOERR:
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if limit != resource.RLIM_INFINITY and _largest(path) + _GROWTH >= limit:
            return DestinationNotWritableError(
                f"{path} cannot grow: this process may write files of at most {limit:,} "
                f"bytes (ulimit -f) ({exc})"
            )
        return DestinationNotWritableError(f"{path} cannot be written ({exc})")
    if code in (_PERM, _READONLY, _CANTOPEN):
        return DestinationNotWritableError(_not_writable(path, exc))
    if code in (_CORRUPT, _NOTADB):
        return ConfigurationError(f"{path} is not a sync database ({exc})")
    return DestinationUnavailableError(f"SQLite: {exc}")


def check_sync_database(conn: sqlite3.Connection, path: str) -> None:
    """Refuse a file that holds tables and none of a sync database's (before any
    migration changes it): an export's state file is named as such."""
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not names or "sync_checkpoints" in names or MIGRATIONS_TABLE in names:
        return
    if "meta" in names and names & {"written", "slices"}:
        raise ConfigurationError(
            f"{path} is the state file of an export (events backfill or contacts export), "
            "not a sync database: give the sync a database of its own"
        )
    shown = ", ".join(sorted(names)[:5])
    raise ConfigurationError(f"{path} is not a sync database (it holds the tables {shown})")


def _folder(path: str) -> str:
    return os.path.dirname(os.path.abspath(path))


def _free(path: str) -> int:
    try:
        found = os.statvfs(_folder(path))
    except OSError:
        return _NEARLY_FULL  # unknown: not judged full
    return found.f_bavail * found.f_frsize


def _largest(path: str) -> int:
    sizes = [0]
    for name in (path, f"{path}-wal", f"{path}-journal"):
        with contextlib.suppress(OSError):
            sizes.append(os.stat(name).st_size)
    return max(sizes)


def _not_writable(path: str, exc: sqlite3.Error) -> str:
    """Why SQLite could not open or write ``path``: its folder (SQLite creates the file,
    its ``-wal`` and ``-shm`` there), or the file itself."""
    folder = _folder(path)
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        return (
            f"the folder {folder} is not writable ({error.strerror or error}): SQLite writes "
            f"{os.path.basename(path)} and its -wal and -shm files there"
        )
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return f"{path} is not writable ({exc})"
    return f"{path} cannot be opened for writing ({exc})"
