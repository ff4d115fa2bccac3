"""An export's two files, checked before anything is written and tidied after a failed start.

The engine's preflight reads permissions (``os.access``), which say yes to root on ``/proc``
and to any character device; here each file is really created (and removed again) or
opened for writing, so a file that cannot be written is a one-line exit 73 before a
request is sent, naming the file. A new job that fails before its first commit leaves no state
file behind: nothing half-written.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from asyncwifi.cli._exit import CliFailure, ExitCode

__all__ = ["check_creatable", "check_export_files", "remove_if_unused", "writing"]

_SIDE_FILES = ("-wal", "-shm", "-journal")


def check_creatable(path: Path, what: str, *, regular: bool = True) -> None:
    """Fail now (73, naming the file) unless ``path`` can be created or written; keeps nothing.

    ``regular``: refuse a device or a pipe (an export must be cut back on resume; an
    appended log such as the webhook receiver's may go to ``/dev/stdout``).
    """
    if path.is_dir():
        raise CliFailure(f"{what} {path} is a directory: name a file", ExitCode.CANT_CREATE)
    if path.exists():
        if regular and not path.is_file():
            raise CliFailure(
                f"{what} {path} is not a regular file (an export is cut back to its last "
                "checkpoint when it resumes)",
                ExitCode.CANT_CREATE,
            )
        try:
            with path.open("ab"):
                pass
        except OSError as exc:
            raise CliFailure(
                f"cannot write {what} {path}: {exc.strerror or exc}", ExitCode.CANT_CREATE
            ) from None
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError as exc:
        raise CliFailure(
            f"cannot create {what} {path}: {exc.strerror or exc}", ExitCode.CANT_CREATE
        ) from None
    os.close(fd)
    path.unlink()


def check_export_files(out: Path, state: Path) -> None:
    """Fail now (73) unless both files can be created or written; creates nothing that
    outlives the call (a corrupt state file is the preflight's: 65)."""
    check_creatable(out, "output")
    check_creatable(state, "state file")


def _file_error(exc: BaseException) -> OSError | sqlite3.Error | None:
    """The file error inside ``exc`` (which may be a task group's exception group)."""
    if isinstance(exc, OSError | sqlite3.Error):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _file_error(inner)
            if found is not None:
                return found
    return None


@contextlib.contextmanager
def writing(out: Path, state: Path) -> Iterator[None]:
    """Report a state file that fails to read as corrupt, and a write error naming the files.

    ``sqlite3`` errors carry no path, and a failed ``write()`` or ``fsync()`` none either:
    the one-line message names the files so the user knows which disk to look at.
    """
    try:
        yield
    except Exception as exc:
        error = _file_error(exc)
        if error is None or (isinstance(error, OSError) and error.filename):
            raise
        if isinstance(error, sqlite3.DatabaseError) and not isinstance(
            error, sqlite3.OperationalError
        ):
            raise CliFailure(
                f"state file {state} is corrupt ({error}): move it away, or pass another --state",
                ExitCode.DATA,
            ) from None
        reason = error.strerror if isinstance(error, OSError) else str(error)
        raise CliFailure(
            f"cannot write {out} or its state file {state}: {reason or error}",
            ExitCode.CANT_CREATE,
        ) from None


def remove_if_unused(out: Path, state: Path, *, out_existed: bool) -> None:
    """After a new job failed: remove a state file that committed nothing, and the output's
    uncommitted bytes, so the next run starts clean instead of meeting a half-made job."""
    from asyncwifi.engine import JsonlDestination

    try:
        info = JsonlDestination.read_only(state) if JsonlDestination.exists(state) else None
    except (sqlite3.Error, OSError):
        return
    if info is not None and (info.records or info.offset):
        return
    for suffix in ("", *_SIDE_FILES):
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            Path(f"{state}{suffix}").unlink()
    # a new job's output was absent or empty before the run: all it holds now is uncommitted
    with contextlib.suppress(OSError):
        if not out_existed:
            out.unlink()
        elif out.is_file():
            os.truncate(out, 0)
