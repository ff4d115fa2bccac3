"""Late events: when the event feed re-reads what (:class:`Lookback`, sans-I/O); the reads
themselves and what was delivered are ``_rereads``.

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
  old (a feed catching up, or one that reads a span late: the plan's one-read rung) needs
  no re-read: joined to ``W`` it moves ``W``; ahead of it (a new feed whose checkpoint
  still owes the re-read of ``[W, cursor]``) it is skipped by that re-read, which is made
  once all the same. ``W`` is saved in the feed's checkpoint, so a restart, a sync run pass
  by pass, or a change of the sync's plan goes on from it: **a change of plan never drops
  a read it owes.**
- the **audit**: a ``span`` of event time that left the lookback a ``span`` ago is read
  once more (at a poll), so that an event up to ``2 * span`` late is found by the audit of
  its slice at the latest; what it finds was later than ``span``: it is stored too, counted
  apart, and said once with the lookback that would have stored it on time. Two kinds
  (:data:`Audit`): ``"full"`` reads the whole slice (a third read of every event: the
  thorough rung of the sync's plan); ``"gaps"`` reads only the stretches of the slice
  where the feed delivered nothing (the times between the events it holds, or the empty
  spans of records with no time), at most :data:`AUDIT_RANGES` requests a slice: what it
  returns is what it finds (spec §8 counts every record returned, and no filter or count
  of the API tells a slice's new events from its old ones: this is the one way an audit
  costs no object for what was read already). It sees an event dated in a stretch it reads;
  one dated at a time the feed already holds, or in a dense slice's shortest gaps, is not.

What neither reads cannot be seen: an event that appears after the final re-read of its
slice (later than ``span``; with the audit, later than ``2 * span``, or outside what a gap
audit reads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from asyncwifi._defaults import LOOKBACK
from asyncwifi._instant import MS
from asyncwifi.errors import ValidationError

__all__ = [
    "AUDIT_RANGES",
    "DEFAULT_LOOKBACK",
    "LOOKBACK_EVERY",
    "MAX_LOOKBACK",
    "Audit",
    "Lookback",
    "Reread",
    "lookback_every",
    "lookback_of",
    "lookback_setting",
]

#: how late an event may appear and still be stored (Airbyte's lookback, dlt's lag)
DEFAULT_LOOKBACK = LOOKBACK
#: the shortest time between two lookbacks (clock seconds; by default a lookback is due
#: every half ``span``: a late event is stored within about 1.5 spans of its own time)
LOOKBACK_EVERY = 30.0
#: the longest lookback (a longer one keeps more than a day of ids in memory: a backfill
#: of the range is the tool for that)
MAX_LOOKBACK = 86_400.0
#: the requests a gap audit spends on a slice at most (its longest empty stretches)
AUDIT_RANGES = 4

#: how the audit reads (see the module docstring)
Audit = Literal["full", "gaps", "off"]


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


def lookback_setting(late_by: float) -> tuple[float, str]:
    """The lookback that stores an event ``late_by`` seconds late, rounded up to a step that
    lateness measured to the minute does not move at every find (5 minutes, 15 from an
    hour, an hour from six; at most :data:`MAX_LOOKBACK`), and how ``--lookback`` spells it
    (``20m``, ``1h45m``, ``7h``)."""
    minutes = math.ceil(max(late_by, 1.0) / 60)
    step = 5 if minutes <= 60 else 15 if minutes <= 360 else 60
    minutes = min(-(-minutes // step) * step, int(MAX_LOOKBACK // 60))
    hours, rest = divmod(minutes, 60)
    text = (f"{hours}h" if hours else "") + (f"{rest}m" if rest or not hours else "")
    return minutes * 60.0, text


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
        audit: Audit = "full",
    ) -> None:
        self.span = timedelta(seconds=lookback_of(span))
        self.every = every
        self.audit: Audit = audit
        #: where the feed started: what lies before was delivered by another run, if at all
        self.started = at
        #: the watermark ``W``: every event before it was read at least a span after its
        #: time; a ``fresh`` feed (no checkpoint: it starts at ``since``) re-reads nothing
        #: before its start. A saved one is no later than what is a span old now: a longer
        #: lookback than the one that saved it owes the stretch it did not wait for
        mark = reread_from or at - self.span
        young = datetime.fromtimestamp(now, UTC) - self.span
        self.lookback_from = at if fresh else min(mark, young)
        #: stretches ahead of ``W`` that a forward read delivered a span old, oldest first:
        #: the re-read owed before them stops there, and ``W`` jumps over them
        self._ahead: list[tuple[datetime, datetime]] = []
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
        self._join()
        if self.audit != "off":
            # the audit reads what left the lookback a span ago, a span at a time (it never
            # lags more than another span behind)
            self.audit_from = max(self.audit_from, self.lookback_from - 3 * self.span)
            audit_to = min(self.lookback_from - self.span, at)
            if audit_to - self.audit_from >= self.span:
                return Reread("audit", self.audit_from, audit_to - MS, now)
        if now < self._due:
            return None
        end = min(at, datetime.fromtimestamp(now, UTC) - self.span)  # what is a span old
        if self._ahead:  # no further than what a forward read delivered a span old
            end = min(end, self._ahead[0][0])
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
            self._join()
            self._due = reread.planned + self.every

    def forward(self, upto: datetime) -> None:
        """The forward read of this poll delivered every event before ``upto``: what was a
        span old when it was read needs no lookback (two spans: no audit either)."""
        now, start = self._poll
        read_at = datetime.fromtimestamp(now, UTC)
        old = min(upto, read_at - self.span)
        if self.lookback_from >= start:  # the read joins the watermark: no gap
            self.lookback_from = max(self.lookback_from, old)
        elif old > start:  # ahead of a re-read still owed: skipped by it
            ahead = self._ahead
            if ahead and ahead[-1][1] >= start:
                ahead[-1] = (ahead[-1][0], max(ahead[-1][1], old))
            else:
                ahead.append((start, old))
        self._join()
        if self.audit_from >= start:
            self.audit_from = max(self.audit_from, min(upto, read_at - 2 * self.span))

    def _join(self) -> None:
        """``W`` reached a stretch read a span old: it moves past it."""
        while self._ahead and self._ahead[0][0] <= self.lookback_from:
            self.lookback_from = max(self.lookback_from, self._ahead.pop(0)[1])

    def needed(self, key: datetime) -> bool:
        """Whether a later re-read may meet a record keyed ``key`` (at or after a watermark:
        what a forward read delivered a span old already moved it)."""
        return bool(self.span) and key >= self.oldest

    @property
    def oldest(self) -> datetime:
        """The oldest event time a later re-read may ask for."""
        if self.audit == "off":
            return self.lookback_from
        return min(self.audit_from, self.lookback_from)

    def unverified(self, key: datetime) -> bool:
        """Whether a record keyed ``key`` may have been delivered before the feed started."""
        return key < self.started
