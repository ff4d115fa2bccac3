"""The API's default order (``sortBy=businessTime``: local wall time at each event's venue)
served as a stream, never sorted whole: a scroll over ten million events holds a window.

An event's local time is its UTC time plus its venue's offset; every venue's offset lies
within two hours of the offsets the venues have at the time being read (a change of offset
moves it by an hour), so reading a selection in UTC order, an event whose local time is
further back than the event just read plus the smallest offset (less two hours) can come
out: no later event sorts before it. Backwards, the same with the largest offset.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable, Iterator, Sequence

from asyncwifi.testing._event_views import View, take

__all__ = ["BusinessView"]

#: the widest change of a venue's offset allowed for (DST moves it by one hour)
_MARGIN = 7_200


class BusinessView(View):
    """``selection`` (in UTC order) by business time, ties in UTC order (``reverse``: the
    exact reverse). Read in order, as a scroll reads it: a page before the last one read
    starts the stream again."""

    __slots__ = ("_at", "_it", "_offset", "_reverse", "_row", "_selection", "_venues")

    def __init__(
        self,
        selection: Sequence[int],
        row: Callable[[int], tuple[int, int, int, int]],
        offset: Callable[[int, int], int],
        venues: int,
        *,
        reverse: bool = False,
    ) -> None:
        self._selection, self._row, self._offset = selection, row, offset
        self._venues, self._reverse = range(venues), reverse
        self._it: Iterator[int] = iter(())
        self._at = -1  # nothing streamed yet

    def __len__(self) -> int:
        return len(self._selection)

    def take(self, p: int, q: int) -> array[int]:
        q = min(q, len(self))
        out: array[int] = array("I")
        if p >= q:
            return out
        if p < self._at or self._at < 0:
            self._it, self._at = self._stream(), 0
        for _ in range(p - self._at):
            next(self._it)
        out.extend(next(self._it) for _ in range(q - p))
        self._at = q
        return out

    def _stream(self) -> Iterator[int]:
        selection, row, offset, venues = self._selection, self._row, self._offset, self._venues
        n, back = len(selection), self._reverse
        sign = -1 if back else 1
        pending: list[tuple[int, int, int]] = []
        seq, hour, bound = 0, None, 0
        for p in range(0, n, 4096):
            lo, hi = (max(0, n - p - 4096), n - p) if back else (p, min(n, p + 4096))
            part = take(selection, lo, hi)
            for i in reversed(part) if back else part:
                t, _, _, v = row(i)
                heapq.heappush(pending, (sign * (t + offset(v, t)), seq, i))
                seq += 1
                if t // 3600 != hour:
                    found = [offset(u, t) for u in venues]
                    hour = t // 3600
                    bound = -(t + max(found) + _MARGIN) if back else t + min(found) - _MARGIN
                while pending[0][0] < bound:
                    yield heapq.heappop(pending)[2]
        while pending:
            yield heapq.heappop(pending)[2]
