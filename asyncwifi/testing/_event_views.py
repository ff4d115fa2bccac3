"""Selections of the event log that are never held whole: the events of some types over a
range of the seeded log (:class:`TypeView`), seeded events merged in time order with
appended ones (:class:`MergeView`), and either read backwards (:class:`Reversed`).

Each is a sequence of event indices in serving order; slicing one gives an ``array`` of
the indices asked for, drawn from the log's blocks as it is read, so a scroll over twenty
million events holds a page, not the selection.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from typing import overload

from asyncwifi.testing._event_log import EventLog

__all__ = ["MergeView", "Reversed", "Selection", "TypeView", "View", "take"]


class View(Sequence[int]):
    """A lazy selection: :meth:`take` gives the indices at positions ``[p, q)``."""

    __slots__ = ()

    def take(self, p: int, q: int) -> array[int]:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[int]: ...
    def __getitem__(self, i: int | slice) -> int | Sequence[int]:
        n = len(self)
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            if step == 1:
                return self.take(start, max(start, stop))
            if step == -1 and i.start is None and i.stop is None:
                return Reversed(self)
            return array("I", [self[j] for j in range(start, stop, step)])
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("selection index out of range")
        return self.take(i, i + 1)[0]

    def __iter__(self) -> Iterator[int]:
        n = len(self)
        for p in range(0, n, 4096):
            yield from self.take(p, min(n, p + 4096))


#: a selection of event indices, in serving order
Selection = range | array | View  # type: ignore[type-arg]


def take(selection: Sequence[int], p: int, q: int) -> Sequence[int]:
    """Positions ``[p, q)`` of any selection."""
    if isinstance(selection, View):
        return selection.take(p, q)
    return selection[p:q]


class TypeView(View):
    """The seeded events in ``[lo, hi)`` whose type code is in ``codes``."""

    __slots__ = ("_codes", "_first", "_hi", "_lo", "_log", "_prefix")

    def __init__(self, log: EventLog, lo: int, hi: int, codes: frozenset[int]) -> None:
        self._log, self._lo, self._hi, self._codes = log, lo, hi, codes
        size = log.SIZE
        self._first = lo // size
        prefix: array[int] = array("q", [0])
        for k in range(self._first, -(-hi // size)):
            a, b = max(lo - k * size, 0), min(hi - k * size, size)
            if a == 0 and b == size:
                counts = log.code_counts(k)
                prefix.append(prefix[-1] + sum(counts[c] for c in codes))
            else:
                part = log.block(k).codes[a:b]
                prefix.append(prefix[-1] + sum(part.count(c) for c in codes))
        self._prefix = prefix

    def __len__(self) -> int:
        return self._prefix[-1]

    def take(self, p: int, q: int) -> array[int]:
        out: array[int] = array("I")
        q = min(q, len(self))
        if p >= q:
            return out
        prefix, size, codes = self._prefix, self._log.SIZE, self._codes
        j = bisect_right(prefix, p) - 1
        skip = p - prefix[j]
        while len(out) < q - p:
            k = self._first + j
            a = max(self._lo - k * size, 0)
            b = min(self._hi - k * size, size)
            found = self._log.block(k).codes
            picked = [k * size + r for r in range(a, b) if found[r] in codes]
            out.extend(picked[skip : skip + q - p - len(out)])
            skip, j = 0, j + 1
        return out

    def count_before(self, index: int) -> int:
        """How many of the selected events have an index below ``index``."""
        size = self._log.SIZE
        index = min(max(index, self._lo), self._hi)
        j = index // size - self._first
        if j >= len(self._prefix) - 1:
            return len(self)
        k = self._first + j
        a = max(self._lo - k * size, 0)
        found = self._log.block(k).codes[a : index - k * size]
        return self._prefix[j] + sum(found.count(c) for c in self._codes)


class MergeView(View):
    """Seeded events (``base``: a range or a :class:`TypeView`) merged in time order with
    appended ones (``added``, in time order); at the same second the seeded event (the lower
    index) comes first. ``rank(t)`` is how many of ``base`` are at or before ``t``."""

    __slots__ = ("_added", "_at", "_base")

    def __init__(
        self,
        base: range | TypeView,
        added: array[int],
        added_times: Sequence[int],
        rank: Callable[[int], int],
        base_newest: int,
    ) -> None:
        self._base, self._added = base, added
        n = len(base)
        #: the merged position of each appended event
        self._at: array[int] = array(
            "q", [j + (n if t >= base_newest else rank(t)) for j, t in enumerate(added_times)]
        )

    def __len__(self) -> int:
        return len(self._base) + len(self._added)

    def take(self, p: int, q: int) -> array[int]:
        out: array[int] = array("I")
        q = min(q, len(self))
        at, added = self._at, self._added
        j = bisect_left(at, p)
        x = p
        while x < q:
            if j < len(at) and at[j] == x:
                out.append(added[j])
                j, x = j + 1, x + 1
                continue
            upto = min(q, at[j] if j < len(at) else q)
            out.extend(take(self._base, x - j, upto - j))
            x = upto
        return out


class Reversed(View):
    """A selection read backwards."""

    __slots__ = ("_view",)

    def __init__(self, view: View) -> None:
        self._view = view

    def __len__(self) -> int:
        return len(self._view)

    def take(self, p: int, q: int) -> array[int]:
        n = len(self._view)
        q = min(q, n)
        if p >= q:
            return array("I")
        part = self._view.take(n - q, n - p)
        part.reverse()
        return part
