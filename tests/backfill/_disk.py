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

from asyncwifi.engine._jsonl import JsonlDestination

__all__ = ["DiskLog", "checkpoint_cut_short", "spy_on_disk"]


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


def checkpoint_cut_short(db: Path) -> int:
    """Do to ``db`` what a checkpoint cut short by a full disk does: the newest committed
    version of each page its ``-wal`` holds is copied into the main file, except the pages
    past the main file's end (the file could not grow). Page 1 then says the database is
    larger than the file: read alone (``immutable``) it is malformed; read with its ``-wal``,
    as SQLite does, it is whole. Returns the pages copied."""
    wal = Path(f"{db}-wal").read_bytes()
    page_size = int.from_bytes(wal[8:12], "big")
    salts = wal[16:24]
    pages: dict[int, bytes] = {}
    newest: dict[int, bytes] = {}
    at = 32
    while at + 24 + page_size <= len(wal):
        header = wal[at : at + 24]
        if header[8:16] != salts:
            break
        number = int.from_bytes(header[0:4], "big")
        pages[number] = wal[at + 24 : at + 24 + page_size]
        if int.from_bytes(header[4:8], "big"):  # a commit frame: the pages so far count
            newest = dict(pages)
        at += 24 + page_size
    in_file = db.stat().st_size // page_size
    copied = 0
    with db.open("r+b") as f:
        for number, data in sorted(newest.items()):
            if number <= in_file:
                f.seek((number - 1) * page_size)
                f.write(data)
                copied += 1
    return copied
