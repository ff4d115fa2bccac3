"""Late events: the event feed's re-reads of the recent past (:class:`Rereads`), around
two sans-I/O parts: when to re-read what (:class:`Lookback`) and what was delivered
(:class:`Delivered`).

A late event reaches the platform after its own time (a visit written when the guest
leaves, an access point uploading after an outage). The API's ``dateStart``/``dateEnd``
filter on the event's own time (our reading of spec §4.5 "events with date >= value";
the simulator's too), so a late event lands behind the feed's cursor, in a span already
read: a feed that only moves forward never sees it. So the feed re-reads:

- the **lookback**: every ``every`` clock seconds (at a poll: never two re-reads in one),
  the events from ``R - span`` up to the cursor, where ``R`` is when the previous lookback
  was sent. An event that appears at most ``span`` after its own time is therefore found
  by the first lookback sent after it appeared. One request while that range holds fewer
  than 10,000 events.
- the **audit**: a ``span`` of event time that left the lookback a ``span`` ago is read
  once more (one request per ``span`` of time and 10,000 events, at a poll: the lookback
  due then waits a poll). So an event that appears up to ``2 * span`` after its own time
  is found by the audit of its slice at the latest; what the audit finds was later than
  ``span``: it is stored too, and counted apart, so that a lookback too short shows (a
  metric and a warning) instead of losing events silently.

What neither reads cannot be seen: an event that appears after the audit of its slice
(later than ``2 * span``, and surely later than ``3 * span``), or in a range the feed
read while catching up, more than ``span`` behind (a restart after a long stop: those
events were read late already). Records found by a re-read are compared with the
ids the feed delivered (:class:`Delivered`); one keyed before the feed started may have
been stored by an earlier run, which only the destination can tell.
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
from asyncwifi._scroll import ScrollStream
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
    "lookback_of",
]

log = logging.getLogger("asyncwifi.sync")

#: how late an event may appear and still be stored (Airbyte's lookback, dlt's lag)
DEFAULT_LOOKBACK = 600.0
#: clock seconds between two lookbacks: a late event is stored within about this long
LOOKBACK_EVERY = 30.0
#: the longest lookback (a longer one re-reads more than a day of events each time, and
#: keeps their ids in memory: a backfill of the range is the tool for that)
MAX_LOOKBACK = 86_400.0


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
    """When to re-read what (see the module docstring); ``at`` is the feed's cursor."""

    def __init__(
        self, span: float, *, every: float, at: datetime, now: float, fresh: bool = False
    ) -> None:
        self.span = timedelta(seconds=lookback_of(span))
        self.every = every
        #: where the feed started: what lies before was delivered by another run, if at all
        self.started = at
        #: the next lookback's start (event time), and the next audit's; a ``fresh`` feed
        #: (no checkpoint: it starts at ``since``) re-reads nothing before its start
        self.lookback_from = self.audit_from = at if fresh else at - self.span
        self._due = now

    def next(self, now: float, at: datetime) -> Reread | None:
        """The re-read to send at this poll (at most one), or None. A lookback with
        nothing behind the cursor yet (catching up) counts as done: what it would cover
        lies ahead of the cursor, where the forward read finds it."""
        if not self.span:
            return None
        # the audit reads what left the lookback a span ago, a span at a time (what a feed
        # catching up read long after its time needs no audit, nor its ids in memory: the
        # audit never lags more than another span behind)
        self.audit_from = max(self.audit_from, self.lookback_from - 3 * self.span)
        audit_to = min(self.lookback_from - self.span, at)
        if audit_to - self.audit_from >= self.span:
            return Reread("audit", self.audit_from, audit_to - MS, now)
        if now < self._due:
            return None
        if self.lookback_from >= at:
            self._advance(now)
            return None
        return Reread("lookback", self.lookback_from, at - MS, now)

    def done(self, reread: Reread) -> None:
        """``reread`` delivered everything it holds."""
        if reread.kind == "audit":
            self.audit_from = reread.end + MS
        else:
            self._advance(reread.planned)

    def _advance(self, now: float) -> None:
        # an event that appears after ``now`` at most ``span`` late is dated after this
        start = datetime.fromtimestamp(now, UTC) - self.span
        self.lookback_from = max(self.lookback_from, start)
        self._due = now + self.every

    @property
    def oldest(self) -> datetime:
        """The oldest event time a later re-read may ask for."""
        return self.audit_from

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
    ) -> None:
        if isinstance(every, bool) or not isinstance(every, int | float) or not every > 0:
            raise ValidationError(f"lookback_every must be positive, got {every!r}")
        self.schedule = Lookback(span, every=every, at=at, now=now, fresh=fresh)
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
        its span: until then, a re-read may ask for it again). A span that ends before
        anything a re-read may ask for (a feed catching up) is not kept. A record set aside
        (``bad``) is remembered by its bytes (``content_id``), not by its id: the same
        record, mended upstream, is then stored when a re-read meets it."""
        if self.delivered is not None and stop >= self.schedule.oldest:
            self.delivered.add(idents, [stop if t is None else t for t in times])
            self.delivered.add([content_id(b) for b in bad], [stop] * len(bad))

    async def read(self, feed: EventFeed, plan: Reread) -> AsyncIterator[Found]:
        """Re-read ``plan`` for ``feed`` (its client, page size, budget and request count):
        a :class:`Found` per page, then one for the closing request (if any)."""
        schedule, delivered = self.schedule, self.delivered
        assert delivered is not None  # a plan comes only with a lookback
        if feed.budget is not None:
            await feed.budget.wait(feed.resource, 1)
        stream: ScrollStream[Event] = feed.api.events.list(
            date_start=plan.start,
            date_end=plan.end,
            sort_by="utcTime",
            size=feed.page_size,
            keep_raw=True,
            **feed.list_options,  # the feed's types (and lane): a re-read asks what it asks
        )
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
