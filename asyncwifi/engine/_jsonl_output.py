"""The output of an export: JSON Lines, one record per line, optionally gzip-compressed.

Each record is written as the server's own JSON bytes, so that no field the SDK does not
know is lost. A page is written as one chunk (with gzip: one complete gzip *member* per
page; a file of several members is a valid gzip stream that ``gzip -d`` and
``gzip.open`` read whole), so truncating the file to a committed length always leaves a
valid file.
"""

from __future__ import annotations

import gzip as _gzip
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import msgspec

from asyncwifi.engine._destination import StateMismatchError
from asyncwifi.errors import ClientStateError

__all__ = ["JsonlOutput", "RawRecord", "encode_lines"]

#: a record's exact bytes: ``bytes``, or the ``msgspec.Raw`` slice a stream hands out
RawRecord = bytes | msgspec.Raw


def encode_lines(records: Sequence[RawRecord]) -> bytes:
    """``records`` as JSON Lines: each followed by ``\\n``.

    JSON forbids raw line breaks inside strings, so a CR or LF in a record can only be
    whitespace between tokens (a pretty-printing server): it is replaced by a space, which
    keeps the record's meaning and the one-record-per-line promise.
    """
    if not records:
        return b""
    chunk = b"\n".join([*records, b""])  # one copy: the trailing b"" adds the last \n
    if chunk.count(b"\n") != len(records) or b"\r" in chunk:
        chunk = b"\n".join(r.replace(b"\r", b" ").replace(b"\n", b" ") for r in records) + b"\n"
    return chunk


class JsonlOutput:
    """Append-only writer of committed chunks; ``append`` returns the new committed length."""

    def __init__(
        self, path: Path, *, gzip: bool = False, compresslevel: int = 6, fsync: bool = True
    ) -> None:
        self.path = path
        self.gzip = gzip
        self.compresslevel = compresslevel
        self.fsync = fsync
        self._fd: int | None = None
        self.offset = 0

    def open(self, committed: int) -> None:
        """Open for appending after truncating to ``committed`` bytes.

        Bytes past ``committed`` are a page that was being written when the previous run
        stopped and was never committed: they are dropped, and the page is fetched again.
        A file shorter than ``committed`` was changed by someone else: refused.
        """
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size < committed:
                raise StateMismatchError(
                    f"{self.path} is {size} bytes but the state says {committed} were written: "
                    "the output was truncated or replaced; restore it or start a new job"
                )
            if size > committed:
                os.ftruncate(fd, committed)
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self.offset = committed

    def encode(self, records: Sequence[RawRecord]) -> bytes:
        """The bytes one page adds to the file (a gzip member when compressing)."""
        chunk = encode_lines(records)
        if self.gzip and chunk:
            return _gzip.compress(chunk, compresslevel=self.compresslevel, mtime=0)
        return chunk

    def append(self, chunk: bytes) -> int:
        """Write ``chunk`` whole, flush it to disk, and return the new length of the file."""
        return self.append_many([chunk])

    def append_many(self, chunks: Iterable[bytes]) -> int:
        """Write every chunk whole, then one fsync (a group commit); the new length. An
        iterator of chunks is written as it yields them (one chunk held at a time)."""
        for chunk in chunks:
            self.write(chunk)
        return self.sync()

    def write(self, chunk: bytes) -> None:
        """Write ``chunk`` whole, not yet flushed to disk (:meth:`sync`): a group commit
        writes each page as it is encoded, holding one page's lines at a time."""
        if self._fd is None:
            raise ClientStateError("the sink is not open")
        view = memoryview(chunk)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self.offset += len(chunk)

    def sync(self) -> int:
        """Flush what was written to disk; the new length of the file."""
        if self._fd is None:
            raise ClientStateError("the sink is not open")
        if self.fsync:
            os.fsync(self._fd)
        return self.offset

    def rollback(self, offset: int) -> None:
        """Cut the file back to ``offset`` after a page whose commit failed.

        A later page committed by another slice must never count the failed page's bytes
        as its own; a truncation that fails leaves the sink unusable instead.
        """
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, offset)
        except OSError:
            self.close()
            raise
        self.offset = offset

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
