"""Per-page bookkeeping, sans-I/O: which records of a page to write, and what to commit.

A page goes through :func:`select_page`: records already delivered by this slice (a
resumed scroll, a server that repeats itself) are dropped by id; records dated within a
second of an internal slice boundary are marked for the cross-slice check (belt and
braces: slices are disjoint at millisecond precision, but a server that rounds its date
filter would hand such a record to both neighbours); and the slice's date cursor and
ordering are advanced, which is what lets a resumed slice narrow its ``dateStart``.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from asyncwifi._instant import format_instant, utc_time
from asyncwifi.backfill._sink import RawRecord

__all__ = [
    "BOUNDARY_MARGIN",
    "Boundaries",
    "PageSelection",
    "date_key",
    "drop",
    "select_general",
    "select_page",
]

#: records dated this close to an internal boundary are checked against the other side
BOUNDARY_MARGIN = timedelta(seconds=1)


def date_key(value: object) -> str | None:
    """A sortable UTC key (``YYYY-MM-DDTHH:MM:SS.ffffffZ``) for a record's date, or ``None``.

    The API's own shapes (``...:SS.mmmZ``, ``...:SSZ``) take a fast path; any other form is
    parsed (no zone means UTC). Anything else gives ``None``: not comparable.
    """
    if not isinstance(value, str) or not value:
        return None
    n = len(value)
    if n == 24 and value[23] == "Z" and value[10] == "T" and value[19] == ".":
        return value[:23] + "000Z"
    if n == 20 and value[19] == "Z" and value[10] == "T":
        return value[:19] + ".000000Z"
    moment = utc_time(value)
    return None if moment is None else format_instant(moment, "microseconds")


@dataclass(frozen=True, slots=True)
class Boundaries:
    """The key ranges, around a slice's internal boundaries, whose records are cross-checked."""

    ranges: tuple[tuple[str, str], ...] = ()

    @classmethod
    def around(cls, moments: Sequence[datetime]) -> Boundaries:
        key = functools.partial(format_instant, timespec="microseconds")
        return cls(tuple((key(m - BOUNDARY_MARGIN), key(m + BOUNDARY_MARGIN)) for m in moments))

    def near(self, key: str) -> bool:
        return any(lo <= key <= hi for lo, hi in self.ranges)


@dataclass(slots=True)
class PageSelection:
    """What to write from one page, and the slice's cursor after it."""

    raws: list[RawRecord] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    #: ids (among ``ids``) dated near a boundary: to check against, and add to, the
    #: boundary table in the commit
    boundary_ids: list[str] = field(default_factory=list)
    duplicates: int = 0
    cursor: str | None = None
    ordered: bool = True


def select_page(
    ids: Sequence[str],
    dates: Sequence[object] | None,
    raws: Sequence[RawRecord],
    *,
    seen: set[str] | frozenset[str],
    boundaries: Boundaries,
    cursor: str | None,
    ordered: bool,
) -> PageSelection:
    """Choose the records of a page to write; ``seen`` is the slice's delivered ids.

    ``dates`` is ``None`` when records carry no date (contacts): no cursor, no boundary.
    A page with no repeated id whose dates all have the API's own shape (the usual case)
    takes a path with no Python loop per record; anything else the general one.
    """
    if seen.isdisjoint(ids) and len(set(ids)) == len(ids):
        fast = _select_fresh(ids, dates, raws, boundaries, cursor, ordered)
        if fast is not None:
            return fast
    return select_general(
        ids, dates, raws, seen=seen, boundaries=boundaries, cursor=cursor, ordered=ordered
    )


def select_general(
    ids: Sequence[str],
    dates: Sequence[object] | None,
    raws: Sequence[RawRecord],
    *,
    seen: set[str] | frozenset[str],
    boundaries: Boundaries,
    cursor: str | None,
    ordered: bool,
) -> PageSelection:
    """:func:`select_page`, one record at a time (any page; the reference for the fast path)."""
    out = PageSelection(cursor=cursor, ordered=ordered)
    in_page: set[str] = set()
    check = bool(boundaries.ranges)
    for i, rid in enumerate(ids):
        if rid in seen or rid in in_page:
            out.duplicates += 1
            continue
        in_page.add(rid)
        out.ids.append(rid)
        out.raws.append(raws[i])
        if dates is None:
            continue
        key = date_key(dates[i])
        if key is None:
            out.ordered = False
            continue
        if out.cursor is None or key >= out.cursor:
            out.cursor = key
        else:
            out.ordered = False
        if check and boundaries.near(key):
            out.boundary_ids.append(rid)
    return out


def _uniform(dates: Sequence[object]) -> bool:
    """Whether every date is a string of the API's shape and one length (then string order
    is time order). Checked with C-level string operations, not a loop per record."""
    first = dates[0]
    if not isinstance(first, str) or len(first) not in (20, 24):
        return False
    size, count = len(first), len(dates)
    try:
        joined = "".join(dates)  # type: ignore[arg-type]  # a non-str raises TypeError
        lengths = set(map(len, dates))  # type: ignore[arg-type]
    except TypeError:
        return False
    return (
        lengths == {size}
        and joined[size - 1 :: size] == "Z" * count
        and joined[10::size] == "T" * count
    )


def _select_fresh(
    ids: Sequence[str],
    dates: Sequence[object] | None,
    raws: Sequence[RawRecord],
    boundaries: Boundaries,
    cursor: str | None,
    ordered: bool,
) -> PageSelection | None:
    """:func:`select_page` for a page without repeats: ``None`` when its dates are irregular."""
    out = PageSelection(ids=list(ids), raws=list(raws), cursor=cursor, ordered=ordered)
    if dates is None or not ids:
        return out
    if not _uniform(dates):
        return None
    texts: list[str] = list(dates)  # type: ignore[arg-type]  # checked by _uniform
    in_order = all(map(operator.le, texts, itertools.islice(texts, 1, None)))
    low, high = (texts[0], texts[-1]) if in_order else (min(texts), max(texts))
    # uniform API-shaped strings always have a key
    low_key, high_key = date_key(low) or low, date_key(high) or high
    out.ordered = ordered and in_order and (cursor is None or low_key >= cursor)
    out.cursor = high_key if cursor is None or high_key > cursor else cursor
    if any(lo <= high_key and low_key <= hi for lo, hi in boundaries.ranges):
        if in_order:
            # the page is sorted: the records near a boundary are found by bisection
            picked: set[int] = set()
            for lo, hi in boundaries.ranges:
                start = bisect.bisect_left(texts, lo, key=_key)
                stop = bisect.bisect_right(texts, hi, key=_key)
                picked.update(range(start, stop))
            out.boundary_ids = [ids[i] for i in sorted(picked)]
        else:
            near = boundaries.near
            out.boundary_ids = [
                rid for rid, text in zip(ids, texts, strict=True) if near(_key(text))
            ]
    return out


def _key(text: str) -> str:
    return date_key(text) or ""


def drop(selection: PageSelection, ids: set[str]) -> None:
    """Remove ``ids`` (already written by a neighbouring slice) from ``selection``."""
    if not ids:
        return
    keep = [i for i, rid in enumerate(selection.ids) if rid not in ids]
    selection.duplicates += len(selection.ids) - len(keep)
    selection.raws = [selection.raws[i] for i in keep]
    selection.ids = [selection.ids[i] for i in keep]
    selection.boundary_ids = [rid for rid in selection.boundary_ids if rid not in ids]
