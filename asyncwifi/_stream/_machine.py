"""The scroll's decisions, sans-I/O (h11 style): a page outcome in, a decision out.

spec §3 ("Scroll session") and observed.md: an id expires some time after the request that
issued it (documented: 60 s; servers have used other figures, and the client cannot check
which), and an expired id answers 200 with no results, exactly like the end. So:

* a page shorter than the size asked for is the end (proved: the server ran out), and
  costs no closing request;
* an empty *first* page of a fresh query is the end (no id was involved);
* an empty continuation is the end only when nothing says otherwise: for contacts, the
  envelope's ``totalCount`` says whether records are missing; for events there is no total,
  and the previous page was full, so it is ambiguous: it is settled by a resume (which
  proves the end in one request with a time cursor: its first page comes back short);
* a continuation due more than a window after the previous answer is known dead: resume
  without spending a request on it;
* a continuation answered with a page this scroll already had (the same records in the
  same order: a server that ignores the scroll id, or replays the page it continues) does
  not advance: nothing of it is delivered again, and the stream stops with an error saying
  the server repeats pages (:attr:`Step.REPEATED`), unless a total shows that every record
  is in (the end). Without it a repeating server is read forever, the quota with it;
* contacts whose envelope carries no usable ``totalCount``: an empty continuation is the
  end, as spec §4.2 says ("repeat until a response has no results"): nothing can tell it
  from an expiry.

In ``"ids"`` mode (no time cursor) an ambiguous end costs a re-scan, which asks for the
largest pages (events: 10,000), so that a first page shorter than that proves the end in one
request. Past one page: when the re-scan's ids live through at least one continuation, it
reads every delivered record again, finds nothing new and meets the empty answer at the same
place, the two scrolls agree and that is the end.

A resume restarts the query: from the last UTC time delivered (``"time"``, when records
carry one and the query is in UTC order), else from the start, skipping every id delivered
(``"rescan"``). A resume that delivered nothing new before needing another one makes no
progress: that is a :class:`~asyncwifi.errors.ScrollExpiredError`, never a loop.
"""

from __future__ import annotations

import enum
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from asyncwifi._cursor import TimeCursor
from asyncwifi._instant import floor_ms, format_instant, utc_time
from asyncwifi.models import record_id, record_ids

__all__ = ["Cursor", "PageOutcome", "ScrollMachine", "Step"]

#: a record's UTC time as the server wrote it
TimeOf = Callable[[Any], str | None]


class Step(enum.Enum):
    """What the stream does next."""

    #: ask for the next page with the scroll id
    CONTINUE = "continue"
    #: no more records: proved
    END = "end"
    #: restart the query from the time cursor (records at the cursor skipped by id)
    RESUME_TIME = "resume-time"
    #: restart the query from its start, skipping every id delivered
    RESUME_RESCAN = "resume-rescan"
    #: the scroll cannot be continued and may not be resumed (or a resume made no progress)
    FAIL = "fail"
    #: a continuation repeated a page of this scroll: the server does not advance it
    REPEATED = "repeated"


@dataclass(frozen=True, slots=True)
class PageOutcome:
    """One page, as far as the decision needs it."""

    #: records the page carried (undecodable ones included), before de-duplication
    records: int
    #: records of it not delivered before
    fresh: int
    #: whether the page answered a continuation (a scroll id) or opened a fresh query
    continuation: bool
    scroll_id: bool
    #: the most the server can have seen between the previous request and this one
    gap: float = 0.0
    #: the envelope's total (contacts' ``totalCount``), if any
    total: int | None = None
    #: the page size asked for, when a shorter page proves the end (events)
    size: int | None = None
    #: the page is one this scroll had before (see :meth:`Cursor.repeats`)
    repeated: bool = False


@dataclass(slots=True)
class Cursor:
    """What was delivered, enough to resume without repeating a record.

    ``mode`` is fixed by the first page: ``"time"`` when the query is in UTC order and its
    records carry a UTC time: a :class:`~asyncwifi._cursor.TimeCursor`, the one cursor of the
    package (the feeds' checkpoints are the same type), fed only the tail of each page; else
    ``"ids"`` (every id delivered is kept as its 64-bit hash: 8 bytes of key per record).
    """

    #: whether a time cursor is allowed (sorted by utcTime, ascending)
    ordered: bool = False
    mode: str | None = None
    delivered: int = 0
    #: ``"time"`` mode: the latest time delivered and the ids delivered at it
    position: TimeCursor | None = None
    #: hashes of every id delivered (``"ids"`` mode only), appended page by page
    hashes: array[int] | None = None
    #: the same as a set, built on the first lookup (after a resume)
    _lookup: set[int] | None = None
    #: hashes of ids the caller already has (a resumed backfill)
    #: hashes of the ids (``ItemError.id``) of records that did not decode: set aside once,
    #: and counted toward a total (else a contacts scroll with one bad record resumes forever)
    set_aside: set[int] = field(default_factory=set)
    #: fingerprints of the pages of the current scroll (since its latest fresh query)
    pages: set[int] = field(default_factory=set)

    @classmethod
    def create(cls, *, ordered: bool, ids: bool = False) -> Cursor:
        cursor = cls(ordered=ordered)
        if ids:
            cursor.mode, cursor.hashes = "ids", array("q")
        return cursor

    def choose_mode(self, first_time: str | None) -> None:
        """Fix the mode on the first page: a time cursor needs UTC order and a time."""
        if self.mode is None:
            if self.ordered and first_time is not None:
                self.mode = "time"
            else:
                self.mode, self.hashes = "ids", array("q")

    def _ids(self) -> set[int] | None:
        """The delivered hashes as a set (``"ids"`` mode), built once when first needed."""
        if self.hashes is None:
            return None
        if self._lookup is None:
            self._lookup = set(self.hashes)
            self.hashes = array("q")  # the set holds them from now on
        return self._lookup

    def repeats(self, ids: Sequence[str | None], continuation: bool) -> bool:
        """Whether a page whose records have these ``ids`` (in order; the bad records' too)
        repeats a page of the current scroll, which a fresh query (not a ``continuation``)
        starts. A page with a record that has no id (a stream without ``keep_raw`` names it
        by nothing) is never taken for a repeat: two such pages may differ, and a mistaken
        repeat would lose records."""
        if not continuation:
            self.pages.clear()
        if not ids or None in ids:
            return False
        key = hash(tuple(ids))
        if key in self.pages:
            return True
        self.pages.add(key)
        return False

    def aside(self, ident: str) -> bool:
        """Note a record that did not decode, by its id; False if a re-scan met it before."""
        key = hash(ident)
        if key in self.set_aside:
            return False
        self.set_aside.add(key)
        return True

    @property
    def time(self) -> str | None:
        """Where a resume by time starts (``"time"`` mode, once a record was delivered)."""
        return None if self.position is None else format_instant(self.position.at)

    @property
    def at_time(self) -> int:
        """Records delivered at :attr:`time`: what a resume by time reads again."""
        return 0 if self.position is None else len(self.position.skip)

    def seen(self, key: str | None, when: str | None) -> bool:
        if key is None:
            return False
        ids = self._ids()
        if ids is not None:
            return hash(key) in ids
        return self.position is not None and self.position.seen(key)

    def fresh(self, keys: Sequence[str | None]) -> list[int] | Literal[False] | None:
        """``"ids"`` mode, a re-scan: the indices of the keys not
        delivered before (``None``: all of them), recorded as delivered, in C-speed steps;
        ``False`` when the page needs the careful path (a missing or repeated id)."""
        ids = self._ids()
        hashes = list(map(hash, keys))
        if ids is None or None in keys or len(set(hashes)) != len(hashes):
            return False
        new = [i for i, h in enumerate(hashes) if h not in ids]
        ids.update(hashes)
        self.delivered += len(new)
        return None if len(new) == len(hashes) else new

    def add_ids(self, keys: Iterable[str | None]) -> None:
        """A page delivered in ``"ids"`` mode before any resume: hashes added in C."""
        if self._lookup is not None:
            self._lookup.update(map(hash, keys))
        elif self.hashes is not None:
            self.hashes.extend(map(hash, keys))  # a None key's hash is never looked up

    def deliver(
        self, items: list[Any], raws: list[Any] | None, time_of: TimeOf | None, resumed: bool
    ) -> list[int] | None:
        """Note a decoded page's records as delivered; returns the indices of those that
        were not delivered before (``None``: all of them). After a resume each record is
        looked up (in C steps when it can); else only counted and, for the time cursor,
        its tail read."""
        if items:
            self.choose_mode(time_of(items[0]) if time_of is not None else None)
        if resumed and self.mode == "ids":
            fast = self.fresh(record_ids(items, raws))
            if fast is not False:
                return fast
        if resumed:
            keep = []
            ids = self._ids()
            for index, (item, key) in enumerate(zip(items, record_ids(items, raws), strict=True)):
                when = time_of(item) if time_of is not None else None
                if self.seen(key, when):
                    continue
                keep.append(index)
                self.delivered += 1
                if key is not None and ids is not None:
                    ids.add(hash(key))
                elif key is not None and when is not None:
                    self._at(when, [key])
            return None if len(keep) == len(items) else keep
        if self.mode == "ids":
            self.add_ids(record_ids(items, raws))
        elif time_of is not None and items:
            self.advance_time(items, raws, time_of)
        self.delivered += len(items)
        return None

    def advance_time(self, items: list[Any], raws: list[Any] | None, time_of: TimeOf) -> None:
        """Move the time cursor to the end of ``items`` (in UTC order; the caller counts
        them): only the tail matters, the last time and the ids delivered at it (by the one
        rule, ``record_id``: with ``raws``, a record with no id is named by its bytes)."""
        last = time_of(items[-1])
        tail: list[str] = []
        for k in range(len(items) - 1, -1, -1):
            if last is None or time_of(items[k]) != last:
                break
            tail.append(record_id(items[k], None if raws is None else raws[k]) or "")
        self._at(last, tail)

    def _at(self, when: str | None, keys: list[str]) -> None:
        """Records delivered at ``when`` (server text): the time cursor moves to it."""
        at = utc_time(when)
        if at is None:
            self.mode = "broken"  # a record without a (readable) time in a time-ordered stream
            return
        if self.position is None:
            self.position = TimeCursor("scroll", floor_ms(at))
        self.position.add_page(keys, [at] * len(keys))


@dataclass(slots=True)
class ScrollMachine:
    """The scroll's decisions (see the module doc); owns no I/O and reads no clock."""

    cursor: Cursor
    #: spec §8: at most this long between two scroll requests
    window: float
    resumable: bool
    resumes: int = 0
    #: whether the stream delivered something new since the latest resume
    progressed: bool = True
    #: records read again since the latest re-scan began (None: not re-scanning)
    rescanned: int | None = None
    #: whether a continuation answered with records since the latest resume
    continued: bool = False
    #: restarts from the time cursor at a smaller page (the month's allowance left less)
    restarts: int = 0

    @property
    def restarted(self) -> bool:
        """Whether the query ever started again (a resume, a restart): records delivered
        before may come again, and are looked up."""
        return bool(self.resumes or self.restarts)

    def can_restart_smaller(self) -> bool:
        """Whether the scroll may end and start again from its time cursor (to ask for a
        smaller page than its own: spec §4.5, a scroll cannot change its size)."""
        cursor = self.cursor
        return self.resumable and cursor.mode == "time" and cursor.time is not None

    def restart_smaller(self) -> str | None:
        """The scroll starts again from its time cursor at a smaller size (see
        :meth:`can_restart_smaller`): where from. Not a lapse: no progress is owed."""
        self.restarts += 1
        self.rescanned = None
        return self.cursor.time

    def restart_larger(self) -> str | None:
        """The scroll starts again at its full size (its first page was small): from its time
        cursor, or (records without a time) from the start, what was delivered looked up and
        skipped; where from. Not a lapse: no progress is owed."""
        timed = self.can_restart_smaller()
        self.restarts += 1
        self.rescanned = None if timed else 0
        return self.cursor.time if timed else None

    def before_continuation(self, since_answer: float) -> Step:
        """Send the continuation, or resume at once: the server saw the previous request
        before its answer arrived, so past a window from that answer the id is dead."""
        return self._resume() if since_answer > self.window else Step.CONTINUE

    def after_page(self, page: PageOutcome) -> Step:
        """The decision once a page is in (its fresh records already delivered)."""
        if page.repeated:
            # a continuation answered with a page this scroll had: the server does not
            # advance it; the end only if a total shows that nothing is missing
            total = page.total
            return Step.END if total is not None and self._counted() >= total else Step.REPEATED
        if page.fresh:
            self.progressed = True
        if self.rescanned is not None:
            self.rescanned += page.records
        if page.continuation and page.records:
            self.continued = True
        if page.records == 0:
            if not page.continuation:
                return Step.END  # a fresh query with nothing in it: no id involved
            if page.total is not None:
                # contacts: totalCount says whether anything is missing
                return self._resume() if self._counted() < page.total else Step.END
            if page.size is None:
                # contacts with no total to compare with: spec §4.2, an empty answer ends
                return Step.END
            # events: the previous page was full (a short one ends the scroll), so this may
            # be an id that expired sooner than documented: only a resume can tell
            cursor = self.cursor
            if (
                not self.progressed
                and self.continued
                and self.rescanned is not None
                and self.rescanned >= cursor.delivered
            ):
                # a re-scan whose ids lived through continuations read every record
                # delivered again, found nothing new, and met the empty answer at the same
                # place: the end (two scrolls agree)
                return Step.END
            return self._resume()
        if page.size is not None and page.records < page.size:
            return Step.END  # the server ran out
        if page.total is not None and self._counted() >= page.total:
            return Step.END  # contacts: every record of totalCount is accounted for
        return Step.CONTINUE if page.scroll_id else Step.END

    def _counted(self) -> int:
        """Records accounted for against a total: delivered, and set aside (they did not
        decode)."""
        cursor = self.cursor
        return cursor.delivered + len(cursor.set_aside)

    def _resume(self) -> Step:
        if not self.resumable or not self.progressed:
            return Step.FAIL
        cursor = self.cursor
        if cursor.mode == "broken":
            return Step.FAIL
        self.resumes += 1
        self.progressed = self.continued = False
        if cursor.mode == "time" and cursor.time is not None:
            self.rescanned = None
            return Step.RESUME_TIME
        self.rescanned = 0
        return Step.RESUME_RESCAN
