"""The event feed's re-reads of the recent past (:class:`Rereads`): made when its
:class:`~asyncwifi.engine._lookback.Lookback` says (the rules are there), compared with what
it delivered (:class:`Delivered`), counted, and said.

Records found by a re-read are compared with the ids the feed delivered (only those read
young enough for a re-read to meet them); one keyed before the feed started may have been
stored by an earlier run, which only the destination can tell. An audit's finds are said
once, with the lookback that would have stored them on time (``--lookback``).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from asyncwifi._instant import MS, floor_ms, format_instant, human_duration, utc_times
from asyncwifi._stream import RAW, ScrollStream
from asyncwifi.engine._lookback import AUDIT_RANGES, Audit, Lookback, Reread, lookback_setting
from asyncwifi.errors import ValidationError
from asyncwifi.models import Event, ItemError, content_id, record_id

if TYPE_CHECKING:
    from asyncwifi.engine._feeds import EventFeed

__all__ = ["Delivered", "Found", "Rereads"]

log = logging.getLogger("asyncwifi.sync")

#: a stretch of event time, both ends inclusive
Stretch = tuple[datetime, datetime]


class Delivered:
    """The ids a feed delivered lately, each with a key: its time, or the end of the span
    it came in (records with no time); and the stretches of event time that hold them (a
    record's own time, or its span): forgotten once keyed before :attr:`Lookback.oldest`.
    """

    def __init__(self) -> None:
        self._ids: set[str] = set()
        self._order: deque[tuple[datetime, str]] = deque()
        self._held: deque[Stretch] = deque()

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, ident: object) -> bool:
        return ident in self._ids

    def add(
        self, idents: Iterable[str], keys: Iterable[datetime], held: Iterable[Stretch] = ()
    ) -> None:
        fresh = [(k, i) for i, k in zip(idents, keys, strict=True) if i not in self._ids]
        self._ids.update(i for _, i in fresh)
        self._order.extend(fresh)
        for stretch in held:
            if not self._held or self._held[-1] != stretch:
                self._held.append(stretch)

    def forget(self, before: datetime) -> None:
        """Forget ids keyed before ``before`` (mostly in key order: a late one may stay a
        little longer, which costs memory, never a delivery)."""
        order, ids, held = self._order, self._ids, self._held
        while order and order[0][0] < before:
            ids.discard(order.popleft()[1])
        while held and held[0][1] < before:
            held.popleft()

    def free(self, start: datetime, end: datetime, most: int) -> list[Stretch]:
        """The ``most`` longest stretches of ``[start, end]`` that hold nothing delivered,
        in time order: what a gap audit reads (its records are all new)."""
        held = sorted(h for h in self._held if h[1] >= start and h[0] <= end)
        gaps: list[Stretch] = []
        at = start
        for low, high in held:
            if low > at:
                gaps.append((at, low - MS))
            at = max(at, high + MS)
        if at <= end:
            gaps.append((at, end))
        return sorted(sorted(gaps, key=lambda g: g[1] - g[0], reverse=True)[:most])


def _held(times: Sequence[datetime | None], start: datetime, stop: datetime) -> list[Stretch]:
    """Where records of these times lie: each its own time, one with none its span."""
    points = [None if t is None else floor_ms(t) for t in times]
    return [(start, stop) if t is None else (t, t) for t in points]


class Found(NamedTuple):
    """A page of a re-read: what the feed had not delivered (the late events)."""

    items: list[Event]
    raws: list[Any]
    times: list[datetime | None]
    #: records that did not decode, and events with no id (their bytes), not seen before
    errors: list[ItemError]
    no_id: list[bytes]
    requests: int
    #: of ``items``, those counted late (not those that may be an earlier run's)
    late: int = 0


class Rereads:
    """An event feed's re-reads: when (:class:`Lookback`), against what it delivered
    (:class:`Delivered`: the ids no later re-read may ask for are forgotten at each poll,
    so a feed catching up keeps few), and what they found and cost.

    ``stored(ids)`` says which ids the destination holds: what a re-read finds from
    before the feed started may have been stored by an earlier run. Without it, such
    records are delivered again (a no-op under a primary key) and not counted as late.
    """

    def __init__(
        self,
        span: float,
        *,
        every: float,
        at: datetime,
        now: float,
        fresh: bool,
        stored: Callable[[list[str]], Awaitable[Collection[str]]] | None,
        reread_from: datetime | None = None,
        audit: Audit = "full",
    ) -> None:
        if isinstance(every, bool) or not isinstance(every, int | float) or not every > 0:
            raise ValidationError(f"lookback_every must be positive, got {every!r}")
        self.schedule = Lookback(
            span, every=every, at=at, now=now, fresh=fresh, reread_from=reread_from, audit=audit
        )
        self.delivered = Delivered() if self.schedule.span else None
        self.stored = stored
        #: late events delivered: found by a lookback, or by an audit (later than it)
        self.late: dict[str, int] = {"lookback": 0, "audit": 0}
        #: re-reads begun, by kind, and the requests they spent (one each while their range
        #: holds less than a page; a gap audit up to ``AUDIT_RANGES``)
        self.reads: dict[str, int] = {"lookback": 0, "audit": 0}
        self.requests = 0
        #: the lookback that would have stored what the audits found on time (seconds; an
        #: upper bound: the event appeared before the audit that found it), and the one
        #: already said (a sync carries it over from feed to feed, and between runs)
        self.late_by = 0.0
        self.told = 0.0
        #: sees ``late_by`` as an audit finds events (the sync plans a longer lookback)
        self.on_late: Callable[[float], None] | None = None

    def due(self, now: float, at: datetime) -> Reread | None:
        """The re-read to send at this poll, if any (see :meth:`Lookback.next`)."""
        plan = self.schedule.next(now, at)
        if self.delivered is not None:
            self.delivered.forget(self.schedule.oldest)
        return plan

    def remember(
        self,
        idents: Sequence[str],
        times: Sequence[datetime | None],
        stop: datetime,
        bad: Sequence[bytes],
        start: datetime | None = None,
    ) -> None:
        """What a page of the feed's span ``[start, stop]`` delivered (a record with no time
        is keyed by the end of its span: until then, a re-read may ask for it again), once
        :meth:`forward` said what it delivered. Only records a later re-read may meet are
        kept (a feed catching up, whose reads are a span late already, keeps none). A
        record set aside (``bad``) is remembered by its bytes (``content_id``), not by its
        id: the same record, mended upstream, is then stored when a re-read meets it."""
        if self.delivered is None:
            return
        needed = self.schedule.needed
        begin = stop if start is None else start
        keys = [stop if t is None else t for t in times]
        if any(map(needed, keys)):
            kept = [(i, k, t) for i, k, t in zip(idents, keys, times, strict=True) if needed(k)]
            held = _held([t for _, _, t in kept], begin, stop)
            self.delivered.add([i for i, _, _ in kept], [k for _, k, _ in kept], held)
        if bad and needed(stop):
            self.delivered.add([content_id(b) for b in bad], [stop] * len(bad), [(begin, stop)])

    def forward(self, upto: datetime) -> None:
        """The forward read delivered every event before ``upto`` (the cursor's time)."""
        self.schedule.forward(upto)

    @property
    def watermark(self) -> datetime | None:
        """Where the next lookback starts (saved in the checkpoint); None: no lookback."""
        return self.schedule.lookback_from if self.schedule.span else None

    async def read(self, feed: EventFeed, plan: Reread) -> AsyncIterator[Found]:
        """Re-read ``plan`` for ``feed`` (its client, page size, budget and request count):
        a :class:`Found` per page, then one for each closing request (if any). A gap audit
        reads only the slice's stretches where nothing was delivered (none: no request)."""
        delivered = self.delivered
        assert delivered is not None  # a plan comes only with a lookback
        stretches = [(plan.start, plan.end)]
        if plan.kind == "audit" and self.schedule.audit == "gaps":
            stretches = delivered.free(plan.start, plan.end, AUDIT_RANGES)
        self.reads[plan.kind] += 1
        late, latest = 0, 0.0
        for start, end in stretches:
            async for found in self._stretch(feed, plan, start, end):
                if found.items and plan.kind == "audit":
                    oldest = min(t or start for t in found.times)
                    latest = max(latest, feed.api.clock.now() - oldest.timestamp())
                late += found.late
                yield found
        self._report(plan, late, latest)
        self.schedule.done(plan)

    async def _stretch(
        self, feed: EventFeed, plan: Reread, start: datetime, end: datetime
    ) -> AsyncIterator[Found]:
        """The records of ``[start, end]`` the feed had not delivered, a page at a time."""
        schedule, delivered = self.schedule, self.delivered
        assert delivered is not None
        if feed.budget is not None:
            await feed.budget.wait(feed.resource, 1)
        # the feed's types (and options, keys): a re-read asks what it asks
        options = {"options": RAW, **feed.list_options}
        read = feed.api.events.keys if options.pop("keys", False) else feed.api.events.list
        stream: ScrollStream[Any] = read(  # Event, or EventKey with keys
            date_start=start, date_end=end, sort_by="utcTime", size=feed.page_size, **options,
        )  # fmt: skip
        spent = feed._spent
        async with stream:
            async for page in stream.pages():
                errors = [e for e in page.errors if content_id(e.raw) not in delivered]
                no_id: list[bytes] = []
                found: list[tuple[Event, Any, datetime | None]] = []
                for item in zip(
                    page.items,
                    page.raw_items or (),
                    utc_times([e.time_text for e in page.items]),
                    strict=True,
                ):
                    ident = record_id(item[0])
                    if ident is None:
                        if content_id(bytes(item[1])) not in delivered:
                            no_id.append(bytes(item[1]))
                    elif ident not in delivered:
                        found.append(item)
                # from before the feed started: an earlier run may have stored them
                unsure = [str(e.id) for e, _, t in found if schedule.unverified(t or plan.start)]
                if unsure and self.stored is not None:
                    held = set(await self.stored(unsure))
                    delivered.add(held, [plan.end] * len(held))  # asked once
                    found = [f for f in found if f[0].id not in held]
                uncounted = len(unsure) if self.stored is None else 0
                times = [t for _, _, t in found]
                delivered.add([str(e.id) for e, _, _ in found], [t or plan.end for t in times],
                              _held(times, start, end))  # fmt: skip
                delivered.add([content_id(e.raw) for e in errors] + [content_id(r) for r in no_id],
                              [plan.end] * (len(errors) + len(no_id)))  # fmt: skip
                requests = self._spent(stream, spent)
                yield Found([e for e, _, _ in found], [r for _, r, _ in found], times, errors,
                            no_id, requests, len(found) - uncounted)  # fmt: skip
        closing = self._spent(stream, spent)
        if closing:
            yield Found([], [], [], [], [], closing)

    def _report(self, plan: Reread, late: int, late_by: float) -> None:
        """Count what a re-read found; an audit's finds are said once (a warning) with the
        lookback that would have stored them on time, and again only when that grows."""
        self.late[plan.kind] += late
        if not late:
            return
        span = self.schedule.span.total_seconds()
        if plan.kind == "lookback":
            log.info("sync: %d late events found by the lookback (%g s) and stored", late, span)
            return
        self.late_by = max(self.late_by, late_by)
        setting, flag = lookback_setting(self.late_by)
        log.log(
            logging.WARNING if setting > self.told else logging.INFO,
            "sync: %d events appeared more than the lookback (%g s) after their own time, "
            "dated %s to %s: the audit found and stored them; a lookback of %s "
            "(--lookback %s) stores such events on time (the audit cannot see every one)",
            late, span, format_instant(plan.start), format_instant(plan.end),
            human_duration(setting), flag,
        )  # fmt: skip
        self.told = max(self.told, setting)
        if self.on_late is not None:
            self.on_late(self.late_by)

    def _spent(self, stream: ScrollStream[Any], spent: Callable[[ScrollStream[Any]], int]) -> int:
        new = spent(stream)
        self.requests += new
        return new
