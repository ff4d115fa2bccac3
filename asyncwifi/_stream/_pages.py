"""What a scroll stream is made of besides its resource's kind: how it is consumed
(:class:`StreamOptions`, the caller's, checked once), what it hands out (:class:`ScrollPage`,
:class:`Record`), and where pages a slow consumer has not reached wait (:class:`Spill`).

The spill file lets the task keep fetching at the scroll's pace (spec §3: one request per
window at least) whatever the consumer does: pages beyond ``max_buffered`` in memory go to
one anonymous temporary file (unlinked at once on POSIX: nothing is left after close,
cancel, error or kill -9), bounded by ``spill_budget`` bytes; only past that budget does the
task wait, and may the scroll lapse. A spilled page is the server's body, exactly, decoded
again when the consumer reaches it, without the records that were not fresh when it came.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any, Generic, NamedTuple, TypeVar

import msgspec

from asyncwifi._protocol import require_positive
from asyncwifi.errors import ClientStateError, ValidationError
from asyncwifi.models import ItemError
from asyncwifi.ratelimit import Lane

__all__ = [
    "DEFAULT_OPTIONS",
    "RAW",
    "SCROLL_WINDOW",
    "SPILL_BUDGET",
    "Record",
    "ScrollPage",
    "Spill",
    "Spilled",
    "StreamOptions",
    "kept",
]

ItemT = TypeVar("ItemT")

# spec §8: 60 seconds at most between two scroll requests
SCROLL_WINDOW = 60.0
#: default disk budget of one stream's spilled pages (1 GiB: ~400 pages of 10,000 events)
SPILL_BUDGET = 1 << 30


class Record(NamedTuple, Generic[ItemT]):
    """One record, typed and as the server's exact JSON bytes (``raw``, with keep_raw).

    A named tuple: immutable, and built at C speed (a frozen dataclass cost ~1 µs a
    record, which a million-event sync paid twice)."""

    item: ItemT
    raw: msgspec.Raw | None


@dataclass(slots=True)
class ScrollPage(Generic[ItemT]):
    """One page of a stream: the records that were not delivered before, in order.

    ``raw_items`` (with ``keep_raw``) holds each item's exact bytes, index for index.
    ``errors`` lists records of the page that did not decode (also passed to
    ``on_item_error`` and kept on ``stream.errors``). ``number`` counts pages from 1.
    """

    items: list[ItemT]
    raw_items: list[msgspec.Raw] | None
    errors: list[ItemError]
    number: int
    scroll_id: str | None
    total: int | None = None

    @property
    def count(self) -> int:
        """How many records the page carries."""
        return len(self.items)

    def first(self, n: int) -> ScrollPage[ItemT]:
        """The page cut to its first ``n`` records (a stream's ``limit``)."""
        raws = None if self.raw_items is None else self.raw_items[:n]
        return ScrollPage(
            self.items[:n], raws, self.errors, self.number, self.scroll_id, self.total
        )


@dataclass(frozen=True, slots=True)
class StreamOptions:
    """How a stream is consumed: the caller's tuning, the same for every resource (what is
    asked of the server is the resource's :class:`~asyncwifi._stream._kind.ScrollKind`).

    ``keep_raw``: keep each record's exact bytes (``page.raw_items``, ``stream.records()``).
    ``prefetch``: pages fetched ahead of the consumer (0: a page is fetched when the consumer
    asks for it, or when the window needs the next request). ``max_buffered``: pages held in
    memory before they go to a temporary file of at most ``spill_budget`` bytes (so a slow
    consumer never lets the scroll lapse). ``on_item_error``: called with each record that did
    not decode (also on ``stream.errors``). ``lane``: the limiter's lane of a fresh query
    (continuations go in the scroll lane). ``limit``: at most this many records, and pages sized
    so that no more are read (spec §8: every record served is an object): a first page of at
    most ``limit``; a scroll that would read past it restarts from its time cursor at the size
    left (events; the restart reads again the records of its boundary's millisecond, usually
    one), or reads its last page whole and hands out what is left of the limit (contacts: a
    scroll cannot change its size, spec §4.5). See docs/guides/streams.md.
    """

    keep_raw: bool = False
    prefetch: int = 1
    max_buffered: int = 4
    spill_budget: int = SPILL_BUDGET
    on_item_error: Callable[[ItemError], None] | None = None
    lane: Lane = Lane.DEFAULT
    limit: int | None = None

    def __post_init__(self) -> None:
        require_positive(self.prefetch, "prefetch", integer=True, zero=True)
        if self.limit is not None:
            require_positive(self.limit, "limit", integer=True)
        budget = self.spill_budget
        if not isinstance(budget, int) or budget < 0:
            raise ValidationError(f"spill_budget must be bytes >= 0, got {budget!r}")


#: the options of a stream when the caller gives none
DEFAULT_OPTIONS = StreamOptions()
#: the options of a stream that hands out the server's bytes too (the sync's, the exports')
RAW = StreamOptions(keep_raw=True)


def limited(options: StreamOptions | None, limit: int | None) -> StreamOptions | None:
    """``options`` with a list's ``limit=`` (checked here, before any request)."""
    if limit is None:
        return options
    if options is not None and not isinstance(options, StreamOptions):
        raise ValidationError(f"options must be a StreamOptions, got {options!r}")
    return dataclasses.replace(options or DEFAULT_OPTIONS, limit=limit)


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


def kept(decoded: Any, keep: list[int] | None) -> tuple[list[Any], list[Any] | None]:
    """The records of a decoded page (and their raw bytes) at the indices ``keep`` (None:
    all of them)."""
    items: list[Any] = decoded.items
    raws: list[Any] | None = decoded.raw_items
    if keep is None:
        return items, raws
    return [items[i] for i in keep], None if raws is None else [raws[i] for i in keep]
