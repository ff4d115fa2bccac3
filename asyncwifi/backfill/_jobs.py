"""The two exports, wired to a :class:`~asyncwifi.Client`: the engine's feeds, part by part.

- :func:`events_backfill`: the organization's events over ``[since, until)``, in time
  slices streamed concurrently, each an :class:`~asyncwifi.engine.EventFeed` of its
  range resumed from its checkpoint (the one cursor: exact on every record shape);
- :func:`contacts_export`: every contact, through the contact feed's full scan; a lapsed
  scroll or a restart scans again, and the destination drops what it already wrote.

``events_params`` / ``contacts_params`` give the :class:`JobParams` a state file is bound to,
for ``JsonlDestination.preflight`` checks before a client is even created.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from asyncwifi._instant import MS
from asyncwifi._resources import PageSize
from asyncwifi._resources import page_size as contacts_page_size
from asyncwifi._stream import StreamOptions, scroll_start_wait
from asyncwifi.backfill._contract import Reporter
from asyncwifi.backfill._export import ExportJob, Opened, Part
from asyncwifi.backfill._plan import Slice, even_slice_size, plan_slices
from asyncwifi.engine import ContactFeed, EventFeed, JobParams, JsonlDestination, PiiPolicy
from asyncwifi.errors import QuotaExhaustedError
from asyncwifi.ratelimit import Lane

if TYPE_CHECKING:
    from asyncwifi._client import Client

__all__ = ["contacts_export", "contacts_params", "events_backfill", "events_params"]

#: spec §8: events pages hold up to 10,000; quota binds, so fewer, fuller pages
EVENTS_PAGE_SIZE = 10_000
#: a scroll that could not start for this long (clock seconds) waits for the day's quota,
#: not for the minute's: the job pauses instead (minute pacing never needs this long)
START_WAIT_LIMIT = 120.0


class _ScrollRoom:
    """The feeds' allowance in an export: before each scroll, :func:`_refuse_if_spent`."""

    def __init__(self, api: Client) -> None:
        self.api = api

    async def wait(self, resource: str, need: int = 1) -> bool:
        _refuse_if_spent(self.api)
        return True

    async def has(self, resource: str, need: int = 1) -> bool:
        """A scroll goes on to its end: the client's quota paces it."""
        return True


def _refuse_if_spent(api: Client) -> None:
    """Raise ``QuotaExhaustedError`` rather than open a scroll the quota cannot serve today.

    The client does not start a scroll it cannot keep alive: it waits for room, which
    after the day's quota is spent means waiting for the reset inside the stream, silently.
    The job pauses (exit 75, or its own wait with progress shown) instead.
    """
    now = api.clock.now()
    # the client's own scroll window (``Client(scroll_window=...)``), not a copy of it
    wait = scroll_start_wait(api.scheduler, now, api.events.scroll_window)
    if wait > START_WAIT_LIMIT:
        raise QuotaExhaustedError(
            "too little of the day's quota is left to start a scroll", reset_at=now + wait
        )


def events_params(
    *,
    out: Path,
    since: datetime,
    until: datetime,
    types: Sequence[str] | None,
    slice_size: timedelta,
    gzip: bool,
    pii: PiiPolicy | None = None,
) -> JobParams:
    """What an events backfill's state file is bound to (``pii``: its policy too)."""
    return JobParams(
        kind="events",
        out=str(out.resolve()),
        gzip=gzip,
        since=since.isoformat(),
        until=until.isoformat(),
        types=tuple(sorted(set(types))) if types else None,
        slice_seconds=round(slice_size.total_seconds()),
        pii=pii.describe() if pii else None,
    )


def contacts_params(
    *, out: Path, gzip: bool, has_email: bool | None, pii: PiiPolicy | None = None
) -> JobParams:
    """What a contact export's state file is bound to (``pii``: its policy too)."""
    return JobParams(
        kind="contacts", out=str(out.resolve()), gzip=gzip, has_email=has_email,
        pii=pii.describe() if pii else None,
    )  # fmt: skip


def events_backfill(
    api: Client,
    *,
    since: datetime,
    until: datetime,
    out: Path,
    state: Path,
    types: Sequence[str] | None = None,
    slice_size: timedelta | None = None,
    gzip: bool = False,
    concurrency: int = 4,
    page_size: int = EVENTS_PAGE_SIZE,
    prefetch: int = 0,
    reporter: Reporter | None = None,
    wait: bool = False,
    max_wait: float | None = None,
    pii: PiiPolicy | None = None,
    fsync: bool = True,
) -> ExportJob:
    """An events backfill of ``[since, until)`` into ``out`` (JSON Lines), resumable via ``state``.

    Configure the client with ``Limits(on_exhausted="raise")`` so that a spent day quota
    checkpoints the job: :meth:`ExportJob.run` then returns ``paused`` (or, with ``wait``,
    sleeps until the reset unless it is more than ``max_wait`` seconds away).

    ``slice_size`` None (the default) cuts the range into ``concurrency`` slices: a few long
    time cursors approach the request floor (``ceil(events / page_size)`` plus one ending
    page per scroll), where short slices each pay a page that is not full.
    """
    if slice_size is None:
        slice_size = even_slice_size(since, until, concurrency)
    wanted = sorted(set(types)) if types else None
    room = _ScrollRoom(api)
    # the output is the server's bytes: each event's id and time is all that is decoded
    stream = StreamOptions(keep_raw=True, prefetch=prefetch, lane=Lane.BULK)
    options = {"types": wanted, "options": stream, "keys": True}

    def part(piece: Slice) -> Part:
        def open_feed(checkpoint: str | None) -> Opened:
            feed = EventFeed(
                api,
                checkpoint=checkpoint,
                since=piece.start,
                until=piece.end - MS,  # the feed's end is inclusive, the slice's is not
                settle=None,  # the range asked for, whatever the clock says
                lookback=0.0,  # one read of a past range: no daemon comes back to it
                page_size=page_size,
                span=piece.end - piece.start,  # one scroll, while records carry a time
                budget=room,
                list_options=options,
            )
            return feed.__aiter__(), lambda: feed.requests

        span = (piece.end - piece.start).total_seconds()
        describe = f"slice {piece.index} ({piece.date_start} .. {piece.date_end})"
        return Part(piece.index, describe, open_feed, span)

    params = events_params(
        out=out, since=since, until=until, types=wanted, slice_size=slice_size, gzip=gzip,
        pii=pii,
    )  # fmt: skip
    slices = plan_slices(since, until, slice_size)
    destination = JsonlDestination(
        state, out, params, parts=len(slices), concurrency=concurrency, fsync=fsync
    )
    return ExportJob(
        api,
        destination,
        [part(piece) for piece in slices],
        reporter=reporter,
        concurrency=concurrency,
        wait=wait,
        max_wait=max_wait,
        pii=pii,
    )


def contacts_export(
    api: Client,
    *,
    out: Path,
    state: Path,
    has_email: bool | None = None,
    gzip: bool = False,
    page_size: PageSize = "max",
    prefetch: int = 0,
    reporter: Reporter | None = None,
    wait: bool = False,
    max_wait: float | None = None,
    pii: PiiPolicy | None = None,
    fsync: bool = True,
) -> ExportJob:
    """Every contact into ``out`` (JSON Lines), resumable via ``state``.

    One full scan of the contact feed; when its scroll lapses (``ScrollExpiredError``) or
    the job restarts, the scan starts again and the contacts already written are dropped
    by id. ``page_size="max"`` (the default) asks for the largest page the server accepts,
    learnt once per client (``api.contacts.largest_page_size``); a number is sent as is.
    """
    page_size = contacts_page_size(page_size, "page_size")  # checked before any request
    room = _ScrollRoom(api)

    def open_scan(checkpoint: str | None) -> Opened:
        feed = ContactFeed(
            api,
            budget=room,
            page_size=page_size,
            list_options={
                "has_email": has_email,
                "options": StreamOptions(keep_raw=True, prefetch=prefetch),
            },
        )
        return feed.scan(), lambda: feed.requests

    params = contacts_params(out=out, gzip=gzip, has_email=has_email, pii=pii)
    destination = JsonlDestination(state, out, params, fsync=fsync)
    return ExportJob(
        api, destination, [Part(0, "the contact scan", open_scan)], reporter=reporter,
        wait=wait, max_wait=max_wait, pii=pii,
    )  # fmt: skip
