"""What a scroll stream is made of: how a scroll is asked for (:class:`ScrollSpec`, read
only) and what it hands out (:class:`ScrollPage`, :class:`Record`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

import msgspec

from asyncwifi._transport import BodyBuffer
from asyncwifi.models import ContactPage, EventPage, ItemError
from asyncwifi.models._chunks import ChunkedPage

__all__ = ["SCROLL_WINDOW", "Chunked", "Record", "ScrollPage", "ScrollSpec"]

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


@dataclass(frozen=True, slots=True)
class ScrollSpec:
    """How one kind of scroll is asked for and read (built by the resources; never changed:
    the page size in use is the stream's own, sent as ``size`` with every request)."""

    path: str
    #: query of the first request, without ``size``
    params: Mapping[str, str]
    #: the page size of the first request
    size: int
    #: the query of a continuation (without ``size``), given the latest scroll id
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
    #: whether a page shorter than the size asked for proves the end (events)
    short_ends: bool = False
    #: the page size of a re-scan (events: the maximum), for it and what follows: it reads
    #: again what was delivered in few requests, and its first page, when short, proves the end
    rescan_size: int | None = None
    #: the size to ask for after the server refused one with a 409 (None: give up); the
    #: owner of the rule is the resource (contacts' ``size="max"``, while not learnt)
    smaller: Callable[[int], int | None] | None = None
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
