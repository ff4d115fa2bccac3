"""What a scroll stream is made of: how a scroll is asked for and consumed
(:class:`ScrollSpec`, read only, checked once) and what it hands out (:class:`ScrollPage`,
:class:`Record`)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

import msgspec

from asyncwifi._transport import BodyBuffer
from asyncwifi.errors import ValidationError
from asyncwifi.models import ContactPage, EventPage, ItemError
from asyncwifi.models._chunks import ChunkedPage
from asyncwifi.ratelimit import Lane

__all__ = ["SCROLL_WINDOW", "SPILL_BUDGET", "Chunked", "Record", "ScrollPage", "ScrollSpec"]

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


@dataclass(frozen=True, slots=True)
class ScrollSpec:
    """How one scroll is asked for and consumed (built by the resources; never changed:
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
    # the caller's options (events.list, contacts.list): see docs/guides/streams.md
    keep_raw: bool = False
    prefetch: int = 1
    max_buffered: int = 4
    window: float = SCROLL_WINDOW
    skip_ids: Collection[str] = ()
    on_item_error: Callable[[ItemError], None] | None = None
    lane: Lane = Lane.DEFAULT
    spill_budget: int = SPILL_BUDGET

    def __post_init__(self) -> None:
        prefetch, budget = self.prefetch, self.spill_budget
        if not isinstance(prefetch, int) or isinstance(prefetch, bool) or prefetch < 1:
            raise ValidationError(f"prefetch must be a positive integer, got {prefetch!r}")
        if not isinstance(budget, int) or budget < 0:
            raise ValidationError(f"spill_budget must be bytes >= 0, got {budget!r}")


@dataclass(slots=True)
class Chunked:
    """A page of records decoded as they are consumed, with the buffer its body is in."""

    chunked: ChunkedPage
    buffer: BodyBuffer
