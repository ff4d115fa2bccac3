"""One writer at a time, held by the operating system: an exclusive ``flock`` on a lock file.

A lock the kernel holds dies with its holder: a process killed with ``kill -9`` (or a host
that rebooted) leaves no lock behind, so the next run starts at once; no expiry to wait for,
no stale lock to remove by hand. :class:`ProcessLock` takes ``flock(LOCK_EX | LOCK_NB)`` on
a file beside what it guards and writes who holds it (pid, host, since when, what it runs)
into it, so that a refused run names its holder (:class:`LockHeldError`).

The lock file is removed when it is released (while still locked: a process that opened it
meanwhile finds it gone, or replaced, and opens it again); a holder killed leaves it, and the
next holder takes it over. ``flock`` locks an open file, not a process: two locks of one
file in one process refuse each other, as two processes do; a command that holds the lock
around its job lets the job's own lock *share* it (``acquire(share=True)`` for the holder
that only guards, the job's plain ``acquire()`` for the writer): one writer per process too.

``flock`` is local to a host (on NFS it may not hold across hosts): a lease that must hold
across hosts keeps its own fencing (``asyncwifi.engine._lease``).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from asyncwifi._instant import format_instant
from asyncwifi.errors import AsyncWifiError

__all__ = ["Holder", "LockHeldError", "ProcessLock"]


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a lock: what an operator needs to find it."""

    pid: int
    host: str
    since: float
    what: str

    @classmethod
    def this_process(cls, what: str) -> Holder:
        return cls(os.getpid(), socket.gethostname(), time.time(), what)

    def __str__(self) -> str:
        since = format_instant(self.since, "seconds")
        return f"{self.what} (pid {self.pid} on {self.host}, since {since})"

    def encode(self) -> bytes:
        fields = {"pid": self.pid, "host": self.host, "since": self.since, "what": self.what}
        return json.dumps(fields).encode() + b"\n"

    @classmethod
    def read(cls, path: Path) -> Holder | None:
        """The holder written in ``path`` (None: unreadable, or being written)."""
        try:
            data = json.loads(path.read_bytes())
            return cls(int(data["pid"]), str(data["host"]), float(data["since"]), str(data["what"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None


class LockHeldError(AsyncWifiError):
    """Another writer holds the lock (``holder``: who, or None when it could not be read)."""

    def __init__(self, guarded: str, holder: Holder | None, lock: Path) -> None:
        self.guarded = guarded
        self.holder = holder
        self.lock = lock
        who = str(holder) if holder is not None else f"another process (lock file {lock})"
        super().__init__(f"{guarded} is being written by {who}")


@dataclass(slots=True)
class _Held:
    fd: int
    sharers: int = 0
    writer: bool = False


#: the locks this process holds, by lock file (``flock`` refuses a second open of one file)
_HELD: dict[str, _Held] = {}
_GUARD = threading.Lock()


class ProcessLock:
    """An exclusive lock on ``path`` (module docstring); ``guarded`` names what it guards in
    the refusal (``output e.jsonl``), ``what`` the holder's command (``asyncwifi events
    backfill``)."""

    def __init__(self, path: Path, *, guarded: str, what: str) -> None:
        self.path = path
        self.guarded = guarded
        self.what = what
        self._key = os.path.abspath(path)
        self._mine: bool | None = None  # None: not held; True: as the writer

    @property
    def held(self) -> bool:
        return self._mine is not None

    def acquire(self, *, share: bool = False) -> None:
        """Take the lock now, or raise :class:`LockHeldError` naming its holder. ``share``:
        a guard that lets one writer of this process take it too (module docstring)."""
        if self._mine is not None:
            return
        with _GUARD:
            held = _HELD.get(self._key)
            if held is None:
                held = _HELD[self._key] = _Held(self._lock_file())
            elif not share and held.writer:
                raise LockHeldError(self.guarded, Holder.read(self.path), self.path)
            if share:
                held.sharers += 1
            else:
                held.writer = True
        self._mine = not share

    def _lock_file(self) -> int:
        """Open, lock and stamp the lock file: its descriptor."""
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise LockHeldError(self.guarded, Holder.read(self.path), self.path) from None
                raise
            try:
                if os.fstat(fd).st_ino != os.stat(self.path).st_ino:
                    os.close(fd)  # released and removed meanwhile: lock the file there now
                    continue
            except FileNotFoundError:
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.pwrite(fd, Holder.this_process(self.what).encode(), 0)
            return fd

    def release(self) -> None:
        """Let the next writer in; the last holder of this process removes the file."""
        mine, self._mine = self._mine, None
        if mine is None:
            return
        with _GUARD:
            held = _HELD.get(self._key)
            if held is None:
                return
            if mine:
                held.writer = False
            else:
                held.sharers -= 1
            if held.writer or held.sharers > 0:
                return
            del _HELD[self._key]
            try:
                self.path.unlink(missing_ok=True)  # still locked: see the module docstring
            finally:
                os.close(held.fd)

    def __enter__(self) -> ProcessLock:
        self.acquire(share=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
