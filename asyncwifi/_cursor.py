"""Checkpoints of the change feeds: what was delivered, exactly, in a few ids and a time.

Sans-I/O: plain objects fed the records in order; ``encode()`` gives the opaque text a
caller stores in the same transaction as the records (``Batch.checkpoint``).

A time cursor (:class:`TimeCursor`) says "every record with a time before ``at`` was
delivered, and of those at ``at`` or later exactly the ids in ``carry`` and ``fresh``".
While the records carry a UTC time and arrive in its order, ``at`` follows them and the id
sets hold only the ids at ``at``. Records with no time (the spec's flat events) cannot move
``at``: their ids pile up in ``fresh`` until the span the stream was asked for
(``dateStart``..``dateEnd``, server-side) completes; then ``at`` jumps to the span's end,
and the span's ids become ``carry`` (the inclusive ``dateEnd`` and ``dateStart`` both
hold records exactly at the boundary, which the next span must skip). While such a span
is in progress its end is saved too (``to``): its ids may lie anywhere up to it, so a cursor
restored from it finishes that same span before it lets them go. So the checkpoint stays
exact on every record shape, and bounded by two spans of ids.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice
from typing import cast

from asyncwifi._instant import floor_ms, format_instant, read_instant
from asyncwifi.errors import ValidationError

__all__ = ["TimeCursor", "parse_checkpoint"]

_VERSION = 1


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
    #: ids delivered before the current span, at its start (skipped by the span)
    carry: set[str] = field(default_factory=set)
    #: ids delivered in the current span since ``at`` last moved
    fresh: set[str] = field(default_factory=set)
    #: whether every record of the current span so far came in time order with a time
    timed: bool = True
    #: the end of the current span (:meth:`begin_span`); saved while the span is not
    #: ``timed`` (its ids in ``fresh`` may lie anywhere up to it)
    stop: datetime | None = None
    #: the events feed's lookback watermark (``sync._lookback``), saved with the cursor so a
    #: restart re-reads no time twice; None: not kept
    reread: datetime | None = None

    @classmethod
    def start(cls, kind: str, checkpoint: str | None, since: datetime) -> TimeCursor:
        """A cursor from a stored checkpoint, else from ``since``."""
        if checkpoint is None:
            return cls(kind, floor_ms(since))
        data = parse_checkpoint(checkpoint, kind)
        try:
            at = floor_ms(read_instant(str(data["at"])))
            carry = {str(i) for i in data.get("carry", [])}  # type: ignore[attr-defined]
            fresh = {str(i) for i in data.get("fresh", [])}  # type: ignore[attr-defined]
            to = data.get("to")
            stop = None if to is None else floor_ms(read_instant(str(to)))
            mark = data.get("reread")
            reread = None if mark is None else floor_ms(read_instant(str(mark)))
        except (KeyError, TypeError, ValueError):
            raise ValidationError(f"a damaged {kind} checkpoint: {checkpoint[:60]!r}") from None
        if stop is None:
            return cls(kind, at, carry, fresh, reread=reread)
        # saved in the middle of a span of records with no time: that span goes on
        return cls(kind, at, carry, fresh, timed=False, stop=stop, reread=reread)

    @property
    def skip(self) -> set[str]:
        """The ids a query from ``at`` must not deliver again."""
        return self.carry | self.fresh

    def begin_span(self, stop: datetime, end: datetime | None = None) -> datetime:
        """A new query from ``at`` to ``stop`` starts: its records are checked for time
        order anew. Returns where the query must stop: ``stop``, unless the cursor was
        restored in the middle of a span of records with no time; then that span's end
        (no later than ``end``), since its ids may lie anywhere up to it."""
        if self.timed or self.stop is None:
            self.timed = True
            self.stop = floor_ms(stop)
            return self.stop
        return self.stop if end is None else min(self.stop, floor_ms(end))

    def seen(self, ident: str) -> bool:
        """Whether ``ident`` was delivered already (a replay after a resume)."""
        return ident in self.carry or ident in self.fresh

    def add(self, ident: str, when: datetime | None) -> None:
        """Record one delivered record (in the order the stream handed them out)."""
        if self.timed and when is not None:
            key = floor_ms(when)
            if key > self.at:
                self.at, self.carry, self.fresh = key, set(), {ident}
                return
            if key == self.at:
                self.fresh.add(ident)
                return
        # no time, or out of order: ``at`` cannot move until the span is complete
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
            if in_order and floor_ms(times[0]) >= self.at:
                last = floor_ms(times[-1])
                first_at_last = len(times) - 1
                while first_at_last and floor_ms(times[first_at_last - 1]) == last:
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
        end = floor_ms(end)
        if end <= self.at:
            return
        if self.timed:
            # nothing was delivered at ``end`` unless ``at`` reached it (then end == at)
            self.carry, self.fresh = set(), set()
        elif self.stop is not None and end < self.stop:
            # a restored span cut short (an earlier end): any of its ids may lie beyond
            # ``end``; the next query goes on with the same span
            self.carry, self.fresh, self.at = self.carry | self.fresh, set(), end
            return
        else:
            # any id of the span may sit exactly at ``end``: the next span skips them
            self.carry, self.fresh = self.fresh, set()
        self.at = end
        self.timed = True
        self.stop = None

    def encode(self) -> str:
        """The opaque checkpoint text (sorted ids: equal states give equal text)."""
        state: dict[str, object] = {
            "v": _VERSION,
            "kind": self.kind,
            "at": format_instant(self.at),
            "carry": sorted(self.carry),
            "fresh": sorted(self.fresh),
        }
        if not self.timed and self.stop is not None:
            state["to"] = format_instant(self.stop)
        if self.reread is not None:
            state["reread"] = format_instant(self.reread)
        return json.dumps(state, separators=(",", ":"))
