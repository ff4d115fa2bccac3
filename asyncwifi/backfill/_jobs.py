"""The two exports built on the engine, wired to a :class:`~asyncwifi.Client`.

- :func:`events_backfill`: the organization's events over ``[since, until)``, in time
  slices streamed concurrently (``sortBy=utcTime`` so a resumed slice can narrow its start
  when the records carry a UTC time); each slice's stream owns the scroll's rules (lapses,
  resumes, proving its end), the engine only commits what it hands out;
- :func:`contacts_export`: every contact, through one scroll; a lapsed scroll (or a
  restart) starts again in the client's resume mode, skipping what was written.

``events_params`` / ``contacts_params`` give the :class:`JobParams` a state file is bound to,
for :func:`~asyncwifi.backfill.preflight` checks before a client is even created.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from asyncwifi.backfill._commit import event_date
from asyncwifi.backfill._contract import Reporter, StreamLike, StreamRequest
from asyncwifi.backfill._engine import ExportJob
from asyncwifi.backfill._plan import Slice, even_slice_size, plan_slices
from asyncwifi.backfill._state import JobParams
from asyncwifi.errors import QuotaExhaustedError
from asyncwifi.ratelimit import Lane
from asyncwifi.resources.contacts import PageSize
from asyncwifi.resources.contacts import page_size as contacts_page_size

if TYPE_CHECKING:
    from asyncwifi._client import Client

__all__ = ["contacts_export", "contacts_params", "events_backfill", "events_params"]

#: spec §8: events pages hold up to 10,000; quota binds, so fewer, fuller pages
EVENTS_PAGE_SIZE = 10_000
#: a stand-in range for the single "slice" of a contact export (contacts are not time-sliced)
_WHOLE = Slice(
    0,
    datetime(1970, 1, 1, tzinfo=UTC),
    datetime(9999, 1, 1, tzinfo=UTC),
)

#: a scroll that could not start for this long (clock seconds) waits for the day's quota,
#: not for the minute's: the job pauses instead (minute pacing never needs this long)
START_WAIT_LIMIT = 120.0


def _refuse_if_spent(api: Client) -> None:
    """Raise ``QuotaExhaustedError`` rather than open a scroll the quota cannot serve today.

    The client does not start a scroll it cannot keep alive: it waits for room, which
    after the day's quota is spent means waiting for the reset inside the stream, silently.
    The job pauses (exit 75, or its own wait with progress shown) instead.
    """
    scheduler = api.scheduler
    now = api.clock.now()
    # the client's own scroll window (``Client(scroll_window=...)``), not a copy of it
    if scheduler.can_meet(now + api.events.scroll_window * 0.5, lane=Lane.SCROLL):
        return
    at = scheduler.earliest_admission(lane=Lane.SCROLL)
    if at - now > START_WAIT_LIMIT:
        raise QuotaExhaustedError(
            "too little of the day's quota is left to start a scroll", reset_at=at
        )


def events_params(
    *,
    out: Path,
    since: datetime,
    until: datetime,
    types: Sequence[str] | None,
    slice_size: timedelta,
    gzip: bool,
) -> JobParams:
    """What an events backfill's state file is bound to."""
    return JobParams(
        kind="events",
        out=str(out.resolve()),
        gzip=gzip,
        since=since.isoformat(),
        until=until.isoformat(),
        types=tuple(sorted(set(types))) if types else None,
        slice_seconds=round(slice_size.total_seconds()),
    )


def contacts_params(*, out: Path, gzip: bool, has_email: bool | None) -> JobParams:
    """What a contact export's state file is bound to."""
    return JobParams(kind="contacts", out=str(out.resolve()), gzip=gzip, has_email=has_email)


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
    prefetch: int = 1,
    reporter: Reporter | None = None,
    wait: bool = False,
    max_wait: float | None = None,
    fsync: bool = True,
) -> ExportJob:
    """An events backfill of ``[since, until)`` into ``out`` (JSON Lines), resumable via ``state``.

    Configure the client with ``on_quota_exhausted="raise"`` so that a spent day quota
    checkpoints the job: :meth:`ExportJob.run` then returns ``paused`` (or, with ``wait``,
    sleeps until the reset unless it is more than ``max_wait`` seconds away).

    ``slice_size`` None (the default) cuts the range into ``concurrency`` slices: a few long
    time cursors approach the request floor (``ceil(events / page_size)`` plus one ending
    page per scroll), where short slices each pay a page that is not full.
    """
    if slice_size is None:
        slice_size = even_slice_size(since, until, concurrency)
    wanted = sorted(set(types)) if types else None
    events = api.events

    def open_stream(request: StreamRequest) -> StreamLike:
        _refuse_if_spent(api)
        return events.list(
            date_start=request.date_start,
            date_end=request.date_end,
            types=wanted,
            size=page_size,
            sort_by="utcTime",
            keep_raw=True,
            skip_ids=request.skip_ids,
            prefetch=prefetch,
            lane=Lane.BULK,
        )

    return ExportJob(
        params=events_params(
            out=out, since=since, until=until, types=wanted, slice_size=slice_size, gzip=gzip
        ),
        slices=plan_slices(since, until, slice_size),
        state_path=state,
        out_path=out,
        open_stream=open_stream,
        clock=api.clock,
        date_of=event_date,
        page_size=page_size,
        reporter=reporter,
        concurrency=concurrency,
        wait=wait,
        max_wait=max_wait,
        fsync=fsync,
    )


def contacts_export(
    api: Client,
    *,
    out: Path,
    state: Path,
    has_email: bool | None = None,
    gzip: bool = False,
    page_size: PageSize = "max",
    prefetch: int = 1,
    reporter: Reporter | None = None,
    wait: bool = False,
    max_wait: float | None = None,
    fsync: bool = True,
) -> ExportJob:
    """Every contact into ``out`` (JSON Lines), resumable via ``state``.

    One scroll; when it lapses (``ScrollExpiredError``) or the job restarts, a new scroll is
    opened in the client's resume mode and the contacts already written are skipped by id.
    ``page_size="max"`` (the default) asks for the largest page the server accepts, learnt
    once per client (``api.contacts.largest_page_size``); a number is sent as is.
    """
    page_size = contacts_page_size(page_size, "page_size")  # checked before any request
    contacts = api.contacts

    def open_stream(request: StreamRequest) -> StreamLike:
        # the engine skips what it already wrote; the client is not given those ids, so that
        # its own expiry check (delivered < totalCount) counts every record it hands out
        _refuse_if_spent(api)
        return contacts.list(
            has_email=has_email,
            size=page_size,
            keep_raw=True,
            resume=request.resume,
            prefetch=prefetch,
        )

    return ExportJob(
        params=contacts_params(out=out, gzip=gzip, has_email=has_email),
        slices=[_WHOLE],
        state_path=state,
        out_path=out,
        open_stream=open_stream,
        clock=api.clock,
        date_of=None,
        # contact pages carry totalCount: the client tells a lapse from the end by itself
        page_size=None,
        reporter=reporter,
        concurrency=1,
        wait=wait,
        max_wait=max_wait,
        fsync=fsync,
    )
