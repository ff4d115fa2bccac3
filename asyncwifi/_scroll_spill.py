"""Pages a slow consumer has not reached yet, kept on disk so the scroll never waits for it.

A stream's background task keeps fetching at the scroll's pace (spec §3: one request per
window at least) whatever its consumer does; pages beyond ``max_buffered`` in memory go to
one anonymous temporary file (``tempfile.TemporaryFile``: unlinked at once on POSIX, so
nothing is left after close, cancel, error or kill -9), bounded by ``spill_budget`` bytes.
Only past that budget does the task wait for the consumer, and may the scroll lapse.

A spilled page is stored as the server's body, exactly; it is decoded again when the
consumer reaches it, and the records that were not fresh when it arrived are left out.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from typing import IO, Any

from asyncwifi._scroll_pages import ScrollPage
from asyncwifi.errors import ClientStateError

__all__ = ["Spill", "Spilled"]


@dataclass(slots=True)
class Spilled:
    """A queued page whose body waits in the spill file."""

    offset: int
    length: int
    #: indices (among the decoded records) to hand out; None: all of them
    keep: list[int] | None
    #: the page, its records left out until it is read back
    page: ScrollPage[Any]


class Spill:
    """An append-only temporary file of page bodies, within a byte budget."""

    __slots__ = ("_file", "budget", "live", "pages", "size")

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._file: IO[bytes] | None = None
        #: bytes in the file (reset to 0 when every spilled page was read)
        self.size = 0
        #: spilled pages not read back yet
        self.live = 0
        #: pages ever spilled (a counter for the stream)
        self.pages = 0

    def room_for(self, length: int) -> bool:
        """Whether ``length`` more bytes stay within the budget."""
        return self.size + length <= self.budget

    def put(self, body: bytes | memoryview) -> tuple[int, int]:
        """Append a body; returns where it is. The caller checked :meth:`room_for`."""
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="asyncwifi-scroll-")  # noqa: SIM115
        offset = self.size
        self._file.seek(offset)
        self._file.write(body)
        length = len(body)
        self.size += length
        self.live += 1
        self.pages += 1
        return offset, length

    def take(self, offset: int, length: int) -> bytes:
        """Read a body back; once every spilled page is read the file starts over."""
        if self._file is None:
            raise ClientStateError("the spill file is closed")
        self._file.seek(offset)
        body = self._file.read(length)
        self.live -= 1
        if self.live == 0:
            self.size = 0
            self._file.truncate(0)
        return body

    @property
    def open(self) -> bool:
        return self._file is not None

    def close(self) -> None:
        """Close (and so delete) the file; idempotent."""
        file, self._file = self._file, None
        self.size = self.live = 0
        if file is not None:
            file.close()
