"""A spy on what reaches the disk during an export: the output's syncs and the state's commits."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from asyncwifi.backfill._state import JsonlDestination

__all__ = ["DiskLog", "spy_on_disk"]


@dataclass
class DiskLog:
    """What reached the disk, in order: ``("sync", size)`` and ``("commit", offset)``."""

    out: Path
    entries: list[tuple[str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def is_output(self, fd: int) -> bool:
        try:
            here, there = os.fstat(fd), os.stat(self.out)
        except OSError:
            return False
        return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)

    def add(self, kind: str, value: int) -> None:
        with self.lock:
            self.entries.append((kind, value))

    def commits(self) -> list[int]:
        return [v for k, v in self.entries if k == "commit"]

    def syncs(self) -> list[int]:
        return [v for k, v in self.entries if k == "sync"]

    def check_order(self, durable: int = 0) -> None:
        """Every commit records no byte that the last sync before it did not cover."""
        assert self.commits(), "nothing was committed: the test proves nothing"
        for n, (kind, value) in enumerate(self.entries):
            if kind == "sync":
                durable = value
            else:
                assert value <= durable, (
                    f"commit #{n} records {value} bytes of output, but only {durable} were "
                    f"fsync'ed before it (log: {self.entries[max(0, n - 4) : n + 1]})"
                )


@contextmanager
def spy_on_disk(out: Path) -> Iterator[DiskLog]:
    """Log the output's syncs (with the file's size then) and the state's page commits."""
    log = DiskLog(out)
    real_commit = JsonlDestination._commit

    def syncing(real: Callable[[int], None]) -> Callable[[int], None]:
        def sync(fd: int) -> None:
            real(fd)
            if log.is_output(fd):
                log.add("sync", os.fstat(fd).st_size)

        return sync

    def commit(self: JsonlDestination, conn: sqlite3.Connection, writes: Any) -> list[int]:
        # logged when SQLite runs the COMMIT itself, with the length the state then records
        def trace(sql: str) -> None:
            if sql.strip().upper() == "COMMIT":
                log.add("commit", self._output.offset)

        conn.set_trace_callback(trace)
        try:
            return real_commit(self, conn, writes)
        finally:
            conn.set_trace_callback(None)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "fsync", syncing(os.fsync))
        if hasattr(os, "fdatasync"):
            mp.setattr(os, "fdatasync", syncing(os.fdatasync))
        mp.setattr(JsonlDestination, "_commit", commit)
        yield log
