"""What a scroll stream is made of: how a scroll is asked for (:class:`ScrollSpec`) and what
it hands out (:class:`ScrollPage`, :class:`Record`), shared by the stream and its task."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

import msgspec

from asyncwifi._transport import BodyBuffer
from asyncwifi.models import ContactPage, EventPage, ItemError
from asyncwifi.models._chunks import ChunkedPage

__all__ = ["END", "SCROLL_WINDOW", "Chunked", "Failure", "Record", "ScrollPage", "ScrollSpec"]

ItemT = TypeVar("ItemT")

# spec §8: 60 seconds at most between two scroll requests
SCROLL_WINDOW = 60.0


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


@dataclass(slots=True)
class ScrollSpec:
    """How one kind of scroll is asked for and read (built by the resources)."""

    path: str
    #: query of the first request
    params: dict[str, str]
    #: the query of a continuation, given the latest scroll id
    continuation: Callable[[str], dict[str, str]]
    #: ContactPage or EventPage
    page_type: type[ContactPage] | type[EventPage]
    #: contacts: totalCount; events: None
    total: Callable[[Any], int | None]
    scroll_id: Callable[[Any], str | None]
    #: restart the query from a UTC time (or from its start: None), for a resume
    restart: Callable[[str | None], dict[str, str]] | None = None
    #: the record's UTC time as the server wrote it (events: ``Event.time_text``)
    time_of: Callable[[Any], str | None] | None = None
    #: whether the query is in UTC order, so that a time is a safe restart point
    ordered: bool = False
    #: the page size asked for, when a shorter page proves the end (events)
    size: int | None = None
    #: the page size (``size``) of a re-scan (events: the maximum), for it and what follows:
    #: reads again what was delivered in as few requests as it can, and its first page,
    #: when shorter, proves the end in one request
    rescan_size: int | None = None
    #: smaller page sizes to fall back to, in order, when the server refuses the first
    #: request's ``size`` with a 409 (contacts asked for the largest page it accepts)
    smaller_sizes: tuple[int, ...] = ()
    #: told the page size the server accepted for the first request (to remember it)
    on_size: Callable[[int], None] | None = None
    #: whether an expiry may be resumed (events always; contacts when resume=True)
    resumable: bool = False
    what: str = "records"
    objects: str | None = None


@dataclass(slots=True)
class Chunked:
    """A page of records decoded as they are consumed, with the buffer its body is in."""

    chunked: ChunkedPage
    buffer: BodyBuffer


@dataclass(slots=True)
class Failure:
    """The background task's error, queued for the consumer to raise."""

    error: BaseException


#: queued after the last page
END = object()
