"""Checkpoints of the change feeds: what was delivered, exactly, in a few ids and a time.

Sans-I/O: plain objects fed the records in order; ``encode()`` gives the opaque text a
caller stores in the same transaction as the records (``Batch.checkpoint``).

A time cursor (:class:`TimeCursor`) says "every record with a time before ``at`` was
delivered, and of those at ``at`` or later exactly the ids in ``carry`` and ``fresh``".
While the records carry a UTC time and arrive in its order, ``at`` follows them and the id
sets hold only the ids at ``at``. Records with no time (the spec's flat events) cannot move
``at``: their ids pile up in ``fresh`` until the window the stream was asked for
(``dateStart``..``dateEnd``, server-side) completes; then ``at`` jumps to the window's end,
and the window's ids become ``carry`` (the inclusive ``dateEnd`` and ``dateStart`` both
hold records exactly at the boundary, which the next window must skip). So the checkpoint
stays exact on every record shape, and bounded by two windows of ids.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import islice
from typing import cast

from asyncwifi.errors import ValidationError
from asyncwifi.models import Event
from asyncwifi.models.events import utc_time

__all__ = ["TimeCursor", "event_time", "event_times", "ms_floor", "parse_checkpoint"]

_VERSION = 1


def ms_floor(when: datetime) -> datetime:
    """``when`` in UTC, cut to the millisecond: the precision of every ``dateStart`` sent
    (so ids are compared at the precision the server is asked with)."""
    if when.tzinfo is not UTC:
        when = when.astimezone(UTC)
    micro = when.microsecond
    return when if not micro % 1000 else when.replace(microsecond=micro - micro % 1000)


def event_time(event: Event) -> datetime | None:
    """``event.time`` (aware UTC, or None), read the fast way for the usual ``...Z`` text:
    one C call per record instead of the general parser (which remains the fallback)."""
    text = event.time_text
    if text is None:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return utc_time(text)
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed if parsed.tzinfo is UTC else parsed.astimezone(UTC)


def event_times(events: Sequence[Event]) -> list[datetime | None]:
    """:func:`event_time` of each event of a page, in two C-driven passes for the usual
    ``...Z`` texts; any other text takes the general path, record by record."""
    texts = [
        w.created_at if (w := e.when) is not None and w.created_at is not None else e.date
        for e in events
    ]
    parse = datetime.fromisoformat
    try:
        times = [None if t is None else parse(t) for t in texts]
    except ValueError:
        return [event_time(e) for e in events]
    for i, when in enumerate(times):
        if when is not None and when.tzinfo is not UTC:  # no zone (UTC), or an offset
            times[i] = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    return times


def _text(when: datetime) -> str:
    return ms_floor(when).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_checkpoint(text: str, kind: str) -> dict[str, object]:
    """The fields of a stored checkpoint of ``kind``; ``ValidationError`` if it is not one."""
    try:
        data = json.loads(text)
    except ValueError:
        raise ValidationError(f"not a {kind} checkpoint: {text[:60]!r}") from None
    if not isinstance(data, dict) or data.get("kind") != kind or data.get("v") != _VERSION:
        raise ValidationError(f"not a version {_VERSION} {kind} checkpoint: {text[:60]!r}")
    return data


@dataclass(slots=True)
class TimeCursor:
    """Exactly what was delivered, by time and ids (see the module docstring)."""

    kind: str
    at: datetime
    #: ids delivered before the current window, at its start (skipped by the window)
    carry: set[str] = field(default_factory=set)
    #: ids delivered in the current window since ``at`` last moved
    fresh: set[str] = field(default_factory=set)
    #: whether every record of the current window so far came in time order with a time
    timed: bool = True

    @classmethod
    def start(cls, kind: str, checkpoint: str | None, since: datetime) -> TimeCursor:
        """A cursor from a stored checkpoint, else from ``since``."""
        if checkpoint is None:
            return cls(kind, ms_floor(since))
        data = parse_checkpoint(checkpoint, kind)
        try:
            at = datetime.fromisoformat(str(data["at"]))  # "...Z" too (Python >= 3.11)
            carry = {str(i) for i in data.get("carry", [])}  # type: ignore[attr-defined]
            fresh = {str(i) for i in data.get("fresh", [])}  # type: ignore[attr-defined]
        except (KeyError, TypeError, ValueError):
            raise ValidationError(f"a damaged {kind} checkpoint: {checkpoint[:60]!r}") from None
        return cls(kind, ms_floor(at), carry, fresh)

    @property
    def skip(self) -> set[str]:
        """The ids a query from ``at`` must not deliver again."""
        return self.carry | self.fresh

    def begin_window(self) -> None:
        """A new query from ``at`` starts: its records are checked for time order anew."""
        self.timed = True

    def seen(self, ident: str) -> bool:
        """Whether ``ident`` was delivered already (a replay after a resume)."""
        return ident in self.carry or ident in self.fresh

    def add(self, ident: str, when: datetime | None) -> None:
        """Record one delivered record (in the order the stream handed them out)."""
        if self.timed and when is not None:
            key = ms_floor(when)
            if key > self.at:
                self.at, self.carry, self.fresh = key, set(), {ident}
                return
            if key == self.at:
                self.fresh.add(ident)
                return
        # no time, or out of order: ``at`` cannot move until the window is complete
        self.timed = False
        self.fresh.add(ident)

    def add_page(self, idents: Sequence[str], whens: Sequence[datetime | None]) -> None:
        """:meth:`add` for each record of a page (UTC times), at once when the page is in
        time order from ``at`` on (the usual case): the state ends the same."""
        if not idents:
            return
        if self.timed and None not in whens:
            times = cast("Sequence[datetime]", whens)
            in_order = all(map(operator.le, times, islice(times, 1, None)))
            if in_order and ms_floor(times[0]) >= self.at:
                last = ms_floor(times[-1])
                first_at_last = len(times) - 1
                while first_at_last and ms_floor(times[first_at_last - 1]) == last:
                    first_at_last -= 1
                tail = idents[first_at_last:]
                if last > self.at:
                    self.at, self.carry, self.fresh = last, set(), set(tail)
                else:
                    self.fresh.update(tail)
                return
        for ident, when in zip(idents, whens, strict=True):
            self.add(ident, when)

    def complete(self, end: datetime) -> None:
        """The query ``[at, end]`` (both inclusive) delivered everything it holds."""
        end = ms_floor(end)
        if end <= self.at:
            return
        if self.timed:
            # nothing was delivered at ``end`` unless ``at`` reached it (then end == at)
            self.carry, self.fresh = set(), set()
        else:
            # any id of the window may sit exactly at ``end``: the next window skips them
            self.carry, self.fresh = self.fresh, set()
        self.at = end
        self.timed = True

    def encode(self) -> str:
        """The opaque checkpoint text (sorted ids: equal states give equal text)."""
        return json.dumps(
            {
                "v": _VERSION,
                "kind": self.kind,
                "at": _text(self.at),
                "carry": sorted(self.carry),
                "fresh": sorted(self.fresh),
            },
            separators=(",", ":"),
        )

    def next_ms(self) -> datetime:
        """The first instant after ``at`` at the query precision."""
        return self.at + timedelta(milliseconds=1)
