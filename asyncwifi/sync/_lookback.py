"""Late events: the event feed's re-reads of the recent past (:class:`Rereads`), around
two sans-I/O parts: when to re-read what (:class:`Lookback`) and what was delivered
(:class:`Delivered`).

A late event reaches the platform after its own time (a visit written when the guest
leaves, an access point uploading after an outage). The API's ``dateStart``/``dateEnd``
filter on the event's own time (our reading of spec §4.5 "events with date >= value";
the simulator's too), so a late event lands behind the feed's cursor, in a span already
read: a feed that only moves forward never sees it. Every read costs objects (spec §8:
each record returned), so each span of event time is read again **once**, when it is a
``span`` old:

- the **lookback** (the final re-read): every ``every`` clock seconds (at a poll: never
  two re-reads in one), the events from the *watermark* ``W`` up to ``now - span`` (and
  no further than the cursor), after which ``W`` moves there. Every event of ``[W, now -
  span]`` appeared by now if it appeared at most ``span`` after its own time, so each is
  found; and no time is re-read twice: an event costs two reads (the forward one and this
  one), not one per lookback as a window re-read every poll would. It is found at most
  ``span + every`` after its own time. A forward read that reaches events already a span
  old (a feed catching up) moves ``W`` itself: they need no re-read. ``W`` is saved in the
  feed's checkpoint, so a restart (or a sync run pass by pass) goes on from it.
- the **audit** (optional, a third read: the sync's plan buys it when the object budget
  allows): a ``span`` of event time that left the lookback a ``span`` ago is read once
  more (one request per ``span`` of time and 10,000 events, at a poll). So an event that
  appears up to ``2 * span`` after its own time is found by the audit of its slice at the
  latest; what the audit finds was later than ``span``: it is stored too, and counted
  apart, so that a lookback too short shows (a metric and a warning) instead of losing
  events silently.

What neither reads cannot be seen: an event that appears after the final re-read of its
slice (later than ``span``; with the audit, later than ``2 * span``). Records found by a
re-read are compared with the ids the feed delivered (:class:`Delivered`, only those read
young enough for a re-read to meet them); one keyed before the feed started may have been
stored by an earlier run, which only the destination can tell.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from asyncwifi._instant import MS, format_instant, utc_times
from asyncwifi._stream import RAW, ScrollStream
from asyncwifi.errors import ValidationError
from asyncwifi.models import Event, ItemError
from asyncwifi.models._identity import content_id, record_id

if TYPE_CHECKING:
    from asyncwifi.sync._feeds import EventFeed

__all__ = [
    "DEFAULT_LOOKBACK",
    "LOOKBACK_EVERY",
    "Delivered",
    "Found",
    "Lookback",
    "Reread",
    "Rereads",
    "lookback_every",
    "lookback_of",
]

log = logging.getLogger("asyncwifi.sync")

#: how late an event may appear and still be stored (Airbyte's lookback, dlt's lag)
DEFAULT_LOOKBACK = 600.0
#: the shortest time between two lookbacks (clock seconds; by default a lookback is due
#: every half ``span``: a late event is stored within about 1.5 spans of its own time)
LOOKBACK_EVERY = 30.0
#: the longest lookback (a longer one keeps more than a day of ids in memory: a backfill
#: of the range is the tool for that)
MAX_LOOKBACK = 86_400.0


def lookback_every(span: float) -> float:
    """Clock seconds between two lookbacks of ``span``: half of it, at least
    :data:`LOOKBACK_EVERY` (each re-read is one request; objects cost the same either way)."""
    return max(LOOKBACK_EVERY, span / 2)


def lookback_of(seconds: object) -> float:
    """The lookback in seconds, checked: the one rule for it (``SyncOptions.lookback``,
    ``EventFeed(lookback=...)``, ``asyncwifi sync --lookback``). 0 turns it off."""
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not math.isfinite(seconds)
        or not 0 <= seconds <= MAX_LOOKBACK
    ):
        raise ValidationError(
            f"lookback must be from 0 (off) to {MAX_LOOKBACK:,.0f} seconds (a day), got {seconds!r}"
        )
    return float(seconds)


@dataclass(frozen=True, slots=True)
class Reread:
    """One re-read: the events of ``[start, end]`` (both inclusive, as the API's filter)."""

    kind: Literal["lookback", "audit"]
    start: datetime
    end: datetime
    #: the clock time it was planned at (the server's selection is no older)
    planned: float


class Lookback:
    """When to re-read what (see the module docstring); ``at`` is the feed's cursor,
    ``reread_from`` the watermark a checkpoint saved (None: a span before ``at``)."""

    def __init__(
        self,
        span: float,
        *,
        every: float,
        at: datetime,
        now: float,
        fresh: bool = False,
        reread_from: datetime | None = None,
        audit: bool = True,
    ) -> None:
        self.span = timedelta(seconds=lookback_of(span))
        self.every = every
        self.audit = audit
        #: where the feed started: what lies before was delivered by another run, if at all
        self.started = at
        #: the watermark ``W``: every event before it was read at least a span after its
        #: time; a ``fresh`` feed (no checkpoint: it starts at ``since``) re-reads nothing
        #: before its start
        self.lookback_from = at if fresh else reread_from or at - self.span
        #: the next audit's start: nothing before the feed's start (an earlier run's audit)
        self.audit_from = max(at, self.lookback_from)
        self._due = now
        #: the poll the forward read belongs to: its clock time and where it started
        self._poll = (now, at)

    def next(self, now: float, at: datetime) -> Reread | None:
        """The re-read to send at this poll (at most one), or None; the forward read that
        follows starts at ``at``."""
        self._poll = (now, at)
        if not self.span:
            return None
        if self.audit:
            # the audit reads what left the lookback a span ago, a span at a time (it never
            # lags more than another span behind)
            self.audit_from = max(self.audit_from, self.lookback_from - 3 * self.span)
            audit_to = min(self.lookback_from - self.span, at)
            if audit_to - self.audit_from >= self.span:
                return Reread("audit", self.audit_from, audit_to - MS, now)
        if now < self._due:
            return None
        end = min(at, datetime.fromtimestamp(now, UTC) - self.span)  # what is a span old
        if self.lookback_from >= end:
            self._due = now + self.every
            return None
        return Reread("lookback", self.lookback_from, end - MS, now)

    def done(self, reread: Reread) -> None:
        """``reread`` delivered everything it holds."""
        if reread.kind == "audit":
            self.audit_from = reread.end + MS
        else:
            self.lookback_from = max(self.lookback_from, reread.end + MS)
            self._due = reread.planned + self.every

    def forward(self, upto: datetime) -> None:
        """The forward read of this poll delivered every event before ``upto``: what was a
        span old when it was read needs no lookback (two spans: no audit either)."""
        now, start = self._poll
        read_at = datetime.fromtimestamp(now, UTC)
        if self.lookback_from >= start:  # the read joins the watermark: no gap
            self.lookback_from = max(self.lookback_from, min(upto, read_at - self.span))
        if self.audit_from >= start:
            self.audit_from = max(self.audit_from, min(upto, read_at - 2 * self.span))

    def needed(self, key: datetime) -> bool:
        """Whether a later re-read may meet a record keyed ``key`` (at or after a watermark:
        what a forward read delivered a span old already moved it)."""
        return bool(self.span) and key >= self.oldest

    @property
    def oldest(self) -> datetime:
        """The oldest event time a later re-read may ask for."""
        return min(self.audit_from, self.lookback_from) if self.audit else self.lookback_from

    def unverified(self, key: datetime) -> bool:
        """Whether a record keyed ``key`` may have been delivered before the feed started."""
        return key < self.started


class Delivered:
    """The ids a feed delivered lately, each with a key: its time, or the end of the span
    it came in (records with no time); forgotten once keyed before :attr:`Lookback.oldest`.
    """

    def __init__(self) -> None:
        self._ids: set[str] = set()
        self._order: deque[tuple[datetime, str]] = deque()

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, ident: object) -> bool:
        return ident in self._ids

    def add(self, idents: Iterable[str], keys: Iterable[datetime]) -> None:
        fresh = [(k, i) for i, k in zip(idents, keys, strict=True) if i not in self._ids]
        self._ids.update(i for _, i in fresh)
        self._order.extend(fresh)

    def forget(self, before: datetime) -> None:
        """Forget ids keyed before ``before`` (mostly in key order: a late one may stay a
        little longer, which costs memory, never a delivery)."""
        order, ids = self._order, self._ids
        while order and order[0][0] < before:
            ids.discard(order.popleft()[1])


class Found(NamedTuple):
    """A page of a re-read: what the feed had not delivered (the late events)."""

    items: list[Event]
    raws: list[Any]
    times: list[datetime | None]
    #: records that did not decode, and events with no id (their bytes), not seen before
    errors: list[ItemError]
    no_id: list[bytes]
    requests: int


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
        audit: bool = True,
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
        #: holds less than a page)
        self.reads: dict[str, int] = {"lookback": 0, "audit": 0}
        self.requests = 0

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
    ) -> None:
        """What a page of the feed delivered (a record with no time is keyed by the end of
        its span: until then, a re-read may ask for it again), once :meth:`forward` said what
        it delivered. Only records a later re-read may meet are kept (a feed catching up,
        whose reads are a span late already, keeps none). A
        record set aside (``bad``) is remembered by its bytes (``content_id``), not by its
        id: the same record, mended upstream, is then stored when a re-read meets it."""
        if self.delivered is None:
            return
        needed = self.schedule.needed
        keys = [stop if t is None else t for t in times]
        if any(map(needed, keys)):
            kept = [(i, k) for i, k in zip(idents, keys, strict=True) if needed(k)]
            self.delivered.add([i for i, _ in kept], [k for _, k in kept])
        if bad and needed(stop):
            self.delivered.add([content_id(b) for b in bad], [stop] * len(bad))

    def forward(self, upto: datetime) -> None:
        """The forward read delivered every event before ``upto`` (the cursor's time)."""
        self.schedule.forward(upto)

    @property
    def watermark(self) -> datetime | None:
        """Where the next lookback starts (saved in the checkpoint); None: no lookback."""
        return self.schedule.lookback_from if self.schedule.span else None

    async def read(self, feed: EventFeed, plan: Reread) -> AsyncIterator[Found]:
        """Re-read ``plan`` for ``feed`` (its client, page size, budget and request count):
        a :class:`Found` per page, then one for the closing request (if any)."""
        schedule, delivered = self.schedule, self.delivered
        assert delivered is not None  # a plan comes only with a lookback
        if feed.budget is not None:
            await feed.budget.wait(feed.resource, 1)
        # the feed's types (and options, keys): a re-read asks what it asks
        options = {"options": RAW, **feed.list_options}
        read = feed.api.events.keys if options.pop("keys", False) else feed.api.events.list
        stream: ScrollStream[Any] = read(  # Event, or EventKey with keys
            date_start=plan.start, date_end=plan.end, sort_by="utcTime", size=feed.page_size,
            **options,
        )  # fmt: skip
        spent = feed._spent
        late = 0
        self.reads[plan.kind] += 1
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
                delivered.add(
                    [str(e.id) for e, _, _ in found], [t or plan.end for _, _, t in found]
                )
                delivered.add([content_id(e.raw) for e in errors] + [content_id(r) for r in no_id],
                              [plan.end] * (len(errors) + len(no_id)))  # fmt: skip
                late += len(found) - uncounted
                requests = self._spent(stream, spent)
                yield Found([e for e, _, _ in found], [r for _, r, _ in found],
                            [t for _, _, t in found], errors, no_id, requests)  # fmt: skip
        closing = self._spent(stream, spent)
        self._report(plan, late)
        schedule.done(plan)
        if closing:
            yield Found([], [], [], [], [], closing)

    def _report(self, plan: Reread, late: int) -> None:
        """Count what a re-read found; an audit's finds are a warning: the lookback is too
        short for this organization's late events, and later ones cannot be seen."""
        self.late[plan.kind] += late
        if not late:
            return
        span = self.schedule.span.total_seconds()
        if plan.kind == "lookback":
            log.info("sync: %d late events found by the lookback (%g s) and stored", late, span)
            return
        log.warning(
            "sync: %d events appeared more than the lookback (%g s) after their own time, "
            "dated %s to %s: the audit found and stored them, but an event that appears after "
            "its audit cannot be seen; lengthen the lookback (--lookback)",
            late, span, format_instant(plan.start), format_instant(plan.end),
        )  # fmt: skip

    def _spent(self, stream: ScrollStream[Any], spent: Callable[[ScrollStream[Any]], int]) -> int:
        new = spent(stream)
        self.requests += new
        return new
