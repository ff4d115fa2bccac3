"""Events, spec §4.5: the organization's events as a scroll stream, and a contact's events.

Validated before any request: ``size`` 1..10000, type names from spec §4.5, ``sort_by``
businessTime|utcTime, dates as aware datetimes or ISO 8601 strings with a zone. The stream
sorts by ``utcTime`` by default (the API's default, businessTime, is local time and not in
UTC order across time zones): in UTC order, and when the records carry a UTC time (the
nested shape's ``when.createdAt``), an expired scroll resumes from the last time delivered;
otherwise (the spec's flat records carry no time) it re-scans, skipping delivered ids.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, ClassVar

from asyncwifi._core import RequestPipeline
from asyncwifi._options import PerCall
from asyncwifi._protocol import (
    EVENT_TYPES,
    Tag,
    build_query,
    format_datetime,
    organization_segment,
    path_segment,
)
from asyncwifi._stream import SCROLL_WINDOW, ScrollStream, StreamOptions, limited
from asyncwifi.errors import ValidationError
from asyncwifi.models import Event, EventKey, EventKeyPage, EventPage, decode_page
from asyncwifi.ratelimit import Lane

__all__ = ["EventKeyScroll", "EventScroll", "Events", "validate_event_query"]

SORT_BY = ("businessTime", "utcTime")
MAX_SIZE = 10_000  # spec §8: events page size 1 to 10000
#: the first page of a stream that asked no size and no limit (issue 42): a loop that stops
#: after a few events reads this many, not 10,000; the rest comes in pages of the maximum
#: after one restart from the time cursor (one request more per stream)
FIRST_PAGE = 100


def validate_event_query(
    *,
    date_start: datetime | str | None,
    date_end: datetime | str | None,
    types: Iterable[str] | None,
    size: int,
    sort_by: str | None,
) -> dict[str, str | int | None]:
    """The wire parameters of an events query, or ``ValidationError`` (spec §4.5)."""
    if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= MAX_SIZE:
        raise ValidationError(f"size must be an integer from 1 to {MAX_SIZE}, got {size!r}")
    if sort_by is not None and sort_by not in SORT_BY:
        raise ValidationError(f"sort_by must be one of {', '.join(SORT_BY)}, got {sort_by!r}")
    start = None if date_start is None else format_datetime(date_start, "date_start")
    end = None if date_end is None else format_datetime(date_end, "date_end")
    if start is not None and end is not None and start > end:
        raise ValidationError(f"date_start ({start}) is after date_end ({end})")
    names: str | None = None
    if types is not None:
        if isinstance(types, str):
            types = [t for t in types.split(",") if t]
        wanted = list(dict.fromkeys(types))
        unknown = [t for t in wanted if t not in EVENT_TYPES]
        if unknown:
            raise ValidationError(
                f"unknown event type(s) {', '.join(map(repr, unknown))}; "
                f"known: {', '.join(sorted(EVENT_TYPES))}"
            )
        if not wanted:
            raise ValidationError("types must name at least one event type (or be None)")
        names = ",".join(wanted)
    return {"dateStart": start, "dateEnd": end, "events": names, "size": size, "sortBy": sort_by}


class EventScroll:
    """The events scroll (spec §4.5), as the stream asks it (a
    :class:`~asyncwifi._stream.ScrollKind`): ``scrollId`` continues it (the size cannot
    change), ``dateStart`` restarts it from a time, and every expiry is resumed; a short
    page is the end."""

    __slots__ = ("_times", "first", "ordered", "params", "path", "size")

    what: ClassVar[Tag] = "events"
    page_type: ClassVar[type[Any]] = EventPage
    record_time: ClassVar[operator.attrgetter[Any]] = operator.attrgetter("time_text")
    resumable: ClassVar[bool] = True
    short_ends: ClassVar[bool] = True
    rescan_size: ClassVar[int] = MAX_SIZE
    objects: ClassVar[None] = None

    def __init__(
        self,
        path: str,
        params: Mapping[str, str],
        size: int,
        *,
        ordered: bool,
        first: int | None = None,
        times: EventTimes | None = None,
    ) -> None:
        self.path = path
        self.params = params
        self.size = size
        #: sorted by utcTime, ascending: a time is a safe restart point
        self.ordered = ordered
        #: a small first page (no size asked, no limit, in UTC order), then ``size``
        self.first = first if ordered and first is not None and first < size else None
        if times is not None and times.timed is False:
            self.first = None  # this server's records carry no time: a small page costs
        self._times = times

    def next(self, scroll_id: str) -> dict[str, str]:
        return {**self.params, "scrollId": scroll_id}

    def restart(self, since: str | None) -> dict[str, str]:
        # a fresh scroll over what remains: from the last time delivered (inclusive; the
        # ids delivered at that time are skipped), else the whole range again
        fresh = dict(self.params)
        if since is not None:
            fresh["dateStart"] = since
        return fresh

    def envelope(self, envelope: Any) -> tuple[int | None, str | None]:
        return None, envelope.scroll_id

    def smaller(self, refused: int) -> int | None:
        return None  # the size is the caller's: a refusal stands

    def accepted(self, size: int) -> None:
        pass

    def timed(self, timed: bool) -> None:
        if self._times is not None:
            self._times.timed = timed


class EventTimes:
    """Whether this client's server writes a time on its events (None: not known yet),
    learnt by the first stream with a small first page: without one, a small first page is
    read twice (a restart from the start), so the next streams start at their full size."""

    __slots__ = ("timed",)

    def __init__(self) -> None:
        self.timed: bool | None = None


class EventKeyScroll(EventScroll):
    """The events scroll, each event decoded as its :class:`~asyncwifi.models.EventKey`."""

    __slots__ = ()

    page_type = EventKeyPage


class Events(PerCall):
    """``api.events``: spec §4.5."""

    __slots__ = ("_api", "_org", "_times", "_window")

    def __init__(
        self, api: RequestPipeline, organization: str | None, window: float = SCROLL_WINDOW
    ) -> None:
        self._api = api
        self._org = organization
        self._window = window
        #: whether the server's events carry a time (shared by the views: copied by reference)
        self._times = EventTimes()

    @property
    def scroll_window(self) -> float:
        """Seconds allowed between two scroll requests (``Client(scroll_window=...)``)."""
        return self._window

    def _organization(self, organization: str | None) -> str:
        return organization_segment(organization, self._org)

    def list(
        self,
        *,
        date_start: datetime | str | None = None,
        date_end: datetime | str | None = None,
        types: Iterable[str] | None = None,
        size: int | None = None,
        sort_by: str = "utcTime",
        sort_reverse: bool | None = None,
        organization: str | None = None,
        extra_params: Mapping[str, object] | None = None,
        options: StreamOptions | None = None,
        limit: int | None = None,
    ) -> ScrollStream[Event]:
        """Stream the organization's events through a scroll (spec §4.5).

        ``size`` defaults to the maximum, 10,000: quota is what binds, so fewer, fuller
        pages; without a ``size`` or a ``limit`` (and in UTC order, the default), the first
        page is of :data:`FIRST_PAGE` events, so that a loop that stops early reads no more,
        and the rest comes in pages of 10,000 after one restart from the time cursor (one
        request more). A slow consumer never lets the scroll lapse: pages past
        ``options.max_buffered`` wait in a temporary file of at most
        ``options.spill_budget`` bytes. An expired scroll resumes transparently
        (``stream.resumes``, ``stream.resume_requests`` count it) and no event is
        delivered twice. ``options``: how the stream is consumed (a
        :class:`~asyncwifi.StreamOptions`: ``keep_raw``, ``prefetch``, ``max_buffered``,
        ``spill_budget``, ``on_item_error``, ``lane``). ``limit``: at most this many events,
        and no page read past them (``StreamOptions.limit``). See docs/guides/streams.md.
        """
        return self._stream(
            EventScroll, date_start, date_end, types, size, sort_by, sort_reverse,
            organization, extra_params, limited(options, limit),
        )  # fmt: skip

    def keys(
        self,
        *,
        date_start: datetime | str | None = None,
        date_end: datetime | str | None = None,
        types: Iterable[str] | None = None,
        size: int | None = None,
        sort_by: str = "utcTime",
        sort_reverse: bool | None = None,
        organization: str | None = None,
        extra_params: Mapping[str, object] | None = None,
        options: StreamOptions | None = None,
        limit: int | None = None,
    ) -> ScrollStream[EventKey]:
        """:meth:`list`'s stream, each event decoded only as its identity and time (an
        :class:`~asyncwifi.models.EventKey`): with ``StreamOptions(keep_raw=True)``, what an
        export that writes the server's bytes needs, at a third of the decoding cost."""
        return self._stream(
            EventKeyScroll, date_start, date_end, types, size, sort_by, sort_reverse,
            organization, extra_params, limited(options, limit),
        )  # fmt: skip

    def _stream(
        self,
        scroll: type[EventScroll],
        date_start: datetime | str | None,
        date_end: datetime | str | None,
        types: Iterable[str] | None,
        size: int | None,
        sort_by: str,
        sort_reverse: bool | None,
        organization: str | None,
        extra_params: Mapping[str, object] | None,
        options: StreamOptions | None,
    ) -> ScrollStream[Any]:
        # no size and no limit: a small first page, then the maximum (the engine's full
        # reads ask their size, and keep it)
        first = FIRST_PAGE if size is None and getattr(options, "limit", None) is None else None
        size = MAX_SIZE if size is None else size
        query = validate_event_query(
            date_start=date_start, date_end=date_end, types=types, size=size, sort_by=sort_by
        )
        path = f"/v1/organizations/{self._organization(organization)}/events"
        # the page size is the stream's to send: a re-scan asks for the maximum
        query.pop("size")
        params = build_query(
            {**query, "sortReverse": sort_reverse, "enableScroll": True}, extra_params
        )
        ordered = sort_by == "utcTime" and not sort_reverse
        kind = scroll(path, params, size, ordered=ordered, first=first, times=self._times)
        return ScrollStream(self._api, kind, options, window=self._window)

    async def for_customer(
        self,
        customer_id: str,
        *,
        date_start: datetime | str | None = None,
        date_end: datetime | str | None = None,
        types: Iterable[str] | None = None,
        size: int = MAX_SIZE,
        sort_by: str | None = None,
        sort_reverse: bool | None = None,
        organization: str | None = None,
        extra_params: Mapping[str, object] | None = None,
    ) -> builtins.list[Event]:
        """One contact's events (spec §4.5, second path; no scrolling on it)."""
        query = validate_event_query(
            date_start=date_start, date_end=date_end, types=types, size=size, sort_by=sort_by
        )
        org = self._organization(organization)
        path = (
            f"/v1/organizations/{org}/customers/{path_segment(customer_id, 'customer_id')}/events"
        )
        params = build_query({**query, "sortReverse": sort_reverse}, extra_params)
        # spec §8: no more events asked for than the month's allowance leaves
        hold = await self._api.scheduler.object_gate.reserve("events", size)
        page = await self._api.read(
            "GET",
            path,
            tag="events",
            params={**params, "size": str(hold.size)},
            lane=Lane.INTERACTIVE,
            decode=lambda b: decode_page(b, EventPage),
            count=lambda page: page.objects,
            hold=hold,
        )
        if page.errors:
            raise page.errors[0].to_exception()
        return page.items
