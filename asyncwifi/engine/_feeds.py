"""Change feeds: records in batches, each with the checkpoint to store in the same transaction.

- :class:`EventFeed` follows the organization's events from a checkpoint, up to a time or
  forever (new events as they appear), over ``dateStart``/``dateEnd`` spans sorted by
  ``utcTime``; exact on every record shape (see ``asyncwifi._cursor``); with a lookback it
  re-reads the recent past for events that appear late (see ``_lookback``).
- contacts, hotspots and segments: see ``_snapshots``.

A record that does not decode, or has no id, comes on ``Batch.bad`` with its bytes, to be
set aside (a dead-letter table): it never stops a feed.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeGuard, TypeVar

import msgspec

from asyncwifi._client import Client
from asyncwifi._cursor import TimeCursor
from asyncwifi._defaults import LOOKBACK, POLL_INTERVAL, SETTLE
from asyncwifi._instant import MS, floor_ms, utc_times
from asyncwifi._stream import RAW, Record, ScrollStream
from asyncwifi.engine._budget import Allowance
from asyncwifi.engine._lookback import Audit
from asyncwifi.engine._lookback import lookback_every as lookback_every_of
from asyncwifi.engine._rereads import Rereads
from asyncwifi.errors import ValidationError
from asyncwifi.models import Event, ItemError, content_id, record_id, record_ids

__all__ = ["BadRecord", "Batch", "EventFeed"]

log = logging.getLogger("asyncwifi.sync")
T = TypeVar("T")

#: the events page the sync asks for (spec: up to 10,000)
MAX_SIZE = 10_000


@dataclass(frozen=True, slots=True)
class BadRecord:
    """A record that could not be stored as such: its exact bytes, why, and its id (by the
    one rule: ``asyncwifi.models._identity``; ``sha256:...`` for a record with none)."""

    raw: bytes
    error: str
    id: str

    @classmethod
    def of(cls, error: ItemError) -> BadRecord:
        return cls(error.raw, f"{error.path}: {error.message}", error.id)


@dataclass(slots=True)
class Batch(Generic[T]):
    """Records of one resource and the checkpoint that covers them.

    Store the records (``items`` typed, ``raws`` the server's bytes, index for index: two
    lists, not a tuple per record, which the hot path would pay for), set ``bad`` aside,
    and save ``checkpoint`` under the feed's name in the same transaction.
    A snapshot's last batch has ``complete`` set and ``seen``: every id the scan found,
    so that what the database holds beyond them was deleted upstream.
    """

    resource: str
    items: list[T]
    raws: list[Any]
    bad: list[BadRecord] = field(default_factory=list)
    checkpoint: str | None = None
    complete: bool = False
    seen: frozenset[str] | None = None
    #: requests this batch cost (for metrics and budgets)
    requests: int = 0
    #: events: each record's UTC time (or None), index for index, read once
    times: list[datetime | None] | None = None
    #: events a re-read found late (no checkpoint): ``"lookback"``, or ``"audit"`` when
    #: they were later than the lookback (see ``_lookback``)
    late: str | None = None
    #: each record's id (by ``asyncwifi.models._identity``), index for index, when known
    ids: list[str] | None = None

    @property
    def records(self) -> list[Record[T]]:
        """The records as (item, raw) pairs (a convenience: the destinations read the lists)."""
        return [Record(i, r) for i, r in zip(self.items, self.raws, strict=True)]


def _clean(idents: list[str | None], cursor: TimeCursor) -> TypeGuard[list[str]]:
    """Whether a page's records all have an id, none twice, none delivered before."""
    if None in idents or len(set(idents)) != len(idents):
        return False
    return cursor.carry.isdisjoint(idents) and cursor.fresh.isdisjoint(idents)


def _fresh(
    items: list[Event], raws: Sequence[msgspec.Raw], cursor: TimeCursor, bad: list[BadRecord]
) -> tuple[list[Event], list[msgspec.Raw], list[str]]:
    """The records of a page to deliver: one with no id goes on ``bad``; one delivered
    before (a replay after a resume), or twice in the page, is skipped."""
    kept: tuple[list[Event], list[msgspec.Raw], list[str]] = ([], [], [])
    taken: set[str] = set()
    for event, raw in zip(items, raws, strict=True):
        ident = record_id(event)
        if ident is None:
            bad.append(BadRecord(bytes(raw), "an event with no id", record_id(event, raw)))
        elif not (ident in taken or cursor.seen(ident)):
            taken.add(ident)
            kept[0].append(event)
            kept[1].append(raw)
            kept[2].append(ident)
    return kept


def _aware(value: datetime | None, what: str) -> datetime | None:
    if value is not None and (value.tzinfo is None or value.utcoffset() is None):
        raise ValidationError(f"{what} has no time zone; pass an aware datetime")
    return value


class EventFeed:
    """The organization's events from a checkpoint, exactly once, in batches.

    ``since`` is where a feed with no checkpoint starts; ``until`` where it stops (inclusive;
    default: now, or never with ``follow=True``, which then polls every ``poll_interval``
    clock seconds for new events). Events newer than ``settle`` seconds are left for the
    next poll: a late write upstream then still lands in a span not yet closed; with
    ``settle=None`` an ``until`` is read whole, even past now (a backfill's range).
    ``poll_interval``, ``settle`` and ``lookback`` default to the sync's (1 min, 1 min,
    10 min: ``asyncwifi._defaults``); a one-off read of a past range passes
    ``settle=None, lookback=0``.
    Records without a UTC time are read in spans (``span`` long at first, then sized to about
    ``span_records``) so the checkpoint's id set stays bounded.

    ``lookback`` (seconds, 0: off) re-reads each span of event time once more when it is a
    lookback old, for events that appear late; their batches have ``late`` set and no
    checkpoint, and the re-read's end moves the checkpoint's watermark (``rereads``: see
    :class:`~asyncwifi.engine._rereads.Rereads`; ``stored``, ``lookback_every`` (default: half
    the lookback) and ``audit`` too: ``"full"``, a third read of what left the lookback;
    ``"gaps"``, only where nothing was delivered; ``"off"``: see ``_lookback``).
    """

    resource = "events"

    def __init__(
        self,
        api: Client,
        *,
        checkpoint: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        follow: bool = False,
        poll_interval: float = POLL_INTERVAL,
        settle: float | None = SETTLE,
        page_size: int = MAX_SIZE,
        span: timedelta = timedelta(days=1),
        span_records: int = 4 * MAX_SIZE,
        budget: Allowance | None = None,
        lookback: float = LOOKBACK,
        lookback_every: float | None = None,
        audit: Audit = "full",
        stored: Callable[[list[str]], Awaitable[Collection[str]]] | None = None,
        list_options: Mapping[str, Any] | None = None,
    ) -> None:
        if checkpoint is None and since is None:
            raise ValidationError("an event feed needs a checkpoint or a since")
        _aware(since, "since")
        _aware(until, "until")
        if since is not None and until is not None and since > until:
            raise ValidationError("since is after until")
        # finite: poll_interval=inf is a feed that never polls again, not a cadence
        cadence = (poll_interval, settle or 0.0)
        if not all(math.isfinite(v) for v in cadence) or poll_interval <= 0 or cadence[1] < 0:
            raise ValidationError("poll_interval and span must be positive, settle >= 0")
        if span <= timedelta(0) or span_records < 1:
            raise ValidationError("poll_interval and span must be positive, settle >= 0")
        self.api = api
        self.cursor = TimeCursor.start("events", checkpoint, since or datetime.now(UTC))
        #: the re-reads of the recent past (a first run re-reads nothing before ``since``)
        every = lookback_every if lookback_every is not None else lookback_every_of(lookback)
        self.rereads = Rereads(
            lookback, every=every, at=self.cursor.at, now=api.clock.now(),
            fresh=checkpoint is None, stored=stored, reread_from=self.cursor.reread, audit=audit,
        )  # fmt: skip
        # what the checkpoint says was delivered at its cursor (and in a span of records with
        # no time it restored): an audit from there must not take them for late ones
        seen, cursor = sorted(self.cursor.skip), self.cursor
        if seen:
            stop = cursor.stop or cursor.at
            self.rereads.remember(seen, [None] * len(seen), stop, [], cursor.at)
        self.until = until
        self.follow = follow
        self.poll_interval = poll_interval
        self.settle = settle
        self.page_size = page_size
        self.span = span
        self.span_records = span_records
        self.budget = budget
        #: more keyword arguments of ``events.list`` (``types``, ``options``: a
        #: ``StreamOptions`` with keep_raw; ``keys=True``: ``events.keys``, for a
        #: destination of the bytes: a batch's items are then its ids, the keys let go)
        self.list_options = dict(list_options or {})
        #: None until a span shows whether the records carry a UTC time
        self.timed_shape: bool | None = None
        self.requests = 0
        #: the stream whose requests were counted last, and how many (held, not its id: a
        #: new stream may get a freed one's id)
        self._counted: tuple[ScrollStream[Any] | None, int] = (None, 0)
        #: the newest event time seen (for the lag metric)
        self.newest: datetime | None = None
        #: events delivered (forward and late), and the event time the completed forward
        #: spans covered, in seconds: the organization's rate of new events
        self._delivered = 0
        self._covered = 0.0
        #: records served again and skipped (delivered before: the ids a span's start
        #: shares with the last one's end, a replay after a resume): served, not delivered
        self.replayed = 0

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.api.clock.now(), UTC)

    def _end(self, until: datetime | None, now: float | None = None) -> datetime:
        if until is not None and self.settle is None:
            return until  # a range read whole, even past the clock's now (a backfill)
        at = self._now() if now is None else datetime.fromtimestamp(now, UTC)
        horizon = at - timedelta(seconds=self.settle or 0.0)
        return horizon if until is None else min(until, horizon)

    async def __aiter__(self) -> AsyncIterator[Batch[Event]]:
        cursor = self.cursor
        span = self.span
        # without follow, an end past "now" is the horizon when the feed starts: a horizon
        # read anew after each span moves on while the span is fetched, never reached
        until = self.until if self.follow or self.settle is None else self._end(self.until)
        until = None if until is None else floor_ms(until)  # the precision of ``at``
        caught_up = False
        while True:
            if caught_up:  # following, and the last span reached the horizon: poll
                if until is not None and cursor.at >= until:
                    return
                await self.api.clock.sleep(self.poll_interval)
            # one "now" for the poll: its re-read and its forward read (what the forward read
            # reaches a span old is then exactly what the re-reads need not read again)
            now = self.api.clock.now()
            plan = self.rereads.due(now, cursor.at)
            if plan is not None:  # at most one re-read a poll
                async for found in self.rereads.read(self, plan):
                    self._delivered += len(found.items)
                    bad = [BadRecord.of(e) for e in found.errors]
                    bad += [
                        BadRecord(raw, "an event with no id", content_id(raw))
                        for raw in found.no_id
                    ]
                    yield Batch("events", found.items, found.raws, bad, times=found.times,
                                late=plan.kind, requests=found.requests)  # fmt: skip
                # the watermark moved: saved, so that no later run reads this time again
                yield Batch("events", [], [], [], self._checkpoint())
            end = floor_ms(self._end(until, now))
            if cursor.at >= end:
                if not self.follow or (until is not None and cursor.at >= until):
                    return
                caught_up = True
                continue
            stop = end if self.timed_shape else min(end, cursor.at + span)
            # a cursor restored mid-span (records with no time) finishes that span
            stop = cursor.begin_span(stop, end)
            caught_up = self.follow and stop >= end
            if self.budget is not None:
                await self.budget.wait(self.resource, 2)
            delivered, begin = 0, cursor.at
            async for batch in self._span(stop):
                delivered += len(batch.items)
                handed, batch = [batch], None  # type: ignore[assignment]  # handed out, not held
                yield handed.pop()
            if self.timed_shape is False:
                # about span_records per span: the checkpoint's ids stay bounded
                scale = self.span_records / max(delivered, 1)
                span = (stop - begin) * scale
                span = max(timedelta(seconds=1), min(self.span * 30, span))

    async def _span(self, stop: datetime) -> AsyncIterator[Batch[Event]]:
        """Every event of ``[cursor.at, stop]`` (a span the cursor began), a batch per
        page; then a batch of its own with the span's completion in the checkpoint."""
        cursor = self.cursor
        start = cursor.at
        options = {"options": RAW, **self.list_options}
        keys = bool(options.pop("keys", False))
        read = self.api.events.keys if keys else self.api.events.list
        stream: ScrollStream[Any] = read(  # Event, or EventKey with keys
            date_start=cursor.at, date_end=stop, sort_by="utcTime", size=self.page_size, **options
        )
        timed, any_record, cut = True, False, False
        newest = self.newest
        async with stream:
            async for page in stream.pages():
                items: list[Event] = page.items
                raws: Sequence[msgspec.Raw] = page.raw_items or ()
                bad = [BadRecord.of(e) for e in page.errors]
                ids = record_ids(items)
                idents: Sequence[str]
                if _clean(ids, cursor):  # the usual page: each record new, with an id
                    idents = ids
                else:  # rare: set aside, or skip, record by record
                    served, flagged = len(items), len(bad)
                    items, raws, idents = _fresh(items, raws, cursor, bad)
                    self.replayed += served - len(items) - (len(bad) - flagged)
                times = utc_times([e.time_text for e in items])
                cursor.add_page(idents, times)
                self.rereads.forward(cursor.at)
                self.rereads.remember(idents, times, stop, [b.raw for b in bad], start)
                if None in times:
                    timed = False
                top = max(filter(None, times), default=None)
                if top is not None and (newest is None or top > newest):
                    newest = top
                any_record = any_record or bool(items)
                self.newest = newest
                self._delivered += len(items)
                # yielded at once (a page held back costs its memory): the span's
                # completion comes after it, on a batch of its own
                named = list(idents)
                batch: Batch[Any] = Batch(
                    "events", named if keys else items, list(raws), bad, self._checkpoint(),
                    times=None if keys else times, ids=named, requests=self._spent(stream),
                )  # fmt: skip
                # a destination of the bytes (``keys``) needs each record's id, not its
                # decoded key nor its time: they go now, not at the batch's commit (about
                # 500 bytes an event, two pages of them a slice while the previous commits)
                page = items = ids = idents = times = raws = bad = named = None  # type: ignore[assignment]
                # handed out, not held while suspended here: committed, it is freed before
                # the next page is asked for (``engine._room`` counts on it)
                handed, batch = [batch], None  # type: ignore[assignment]
                yield handed.pop()
                if self.budget is not None and not await self.budget.has(self.resource):
                    cut = True  # the budget is spent: the next span waits, from the cursor
                    break
        if cut:
            return
        if not timed:
            self.timed_shape = False
        elif any_record and self.timed_shape is None:
            self.timed_shape = True
        self._covered += (stop - start).total_seconds() if stop > start else 0.0
        cursor.complete(stop)
        self.rereads.forward(cursor.at + MS)  # every event up to ``stop`` (inclusive)
        yield Batch(
            "events", [], [], [], self._checkpoint(), times=[], ids=[],
            requests=self._spent(stream),
        )  # fmt: skip

    @property
    def measured(self) -> tuple[int, float]:
        """Events delivered so far, and the seconds of event time the forward read
        covered: what the sync's plan measures the rate of new events by."""
        return self._delivered, self._covered

    def _checkpoint(self) -> str:
        """The cursor with the lookback's watermark: what to save with a batch."""
        self.cursor.reread = self.rereads.watermark
        return self.cursor.encode()

    def _spent(self, stream: ScrollStream[Any]) -> int:
        """Requests of ``stream`` not yet counted, counted now (``requests``; a budget
        reads the limiter's own count)."""
        last, counted = self._counted
        new = stream.requests - (counted if last is stream else 0)
        self._counted = (stream, stream.requests)
        self.requests += new
        return new
