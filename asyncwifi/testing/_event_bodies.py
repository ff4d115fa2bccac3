"""The JSON of each event as served (spec §4.5 pages), built lazily one chunk of events at a
time and cached as one ``bytes`` blob with offsets (and, for descending pages, the chunk
reversed); a page body is then a join of slices of those blobs. Only the chunks read last
are kept (``CACHE``): a chunk is built again, the same, when read again, so the memory does
not grow with the log. An event served as changed (``patch``) replaces its built JSON."""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any

import msgspec

__all__ = ["EventBodies"]


class EventBodies:
    """The served JSON of ``count`` events, event ``i``'s built by ``make(i)`` (a Struct)."""

    CHUNK = 2048
    #: chunks kept built (about 1 MB each), in each direction: a few scrolls at a time
    CACHE = 12

    __slots__ = ("_chunks", "_count", "_encode", "_limit", "_make", "_patched", "_rchunks")

    def __init__(self, make: Callable[[int], Any], count: int) -> None:
        self._make = make
        self._count = count
        self._chunks: OrderedDict[int, tuple[bytes, array[int]]] = OrderedDict()
        self._rchunks: OrderedDict[int, tuple[bytes, array[int]]] = OrderedDict()
        self._patched: dict[int, bytes] = {}  # events served as changed (``patch``)
        self._encode = msgspec.json.Encoder().encode
        self._limit: int | None = self.CACHE  # None: every chunk kept (``warm(hold=True)``)

    def grow(self, count: int) -> None:
        """The log holds ``count`` events now (appended after the others)."""
        if self._count % self.CHUNK:  # a partial last chunk grows stale
            self._forget(self._count // self.CHUNK)
        self._count = count

    def _forget(self, k: int) -> None:
        self._chunks.pop(k, None)
        self._rchunks.pop(k, None)

    def patch(self, i: int, body: bytes) -> None:
        """Serve event ``i`` as ``body`` from now on (its chunk is built again)."""
        self._patched[i] = body
        self._forget(i // self.CHUNK)

    def _keep(self, cache: OrderedDict[int, tuple[bytes, array[int]]], k: int, chunk: Any) -> None:
        cache[k] = chunk
        if self._limit is not None and len(cache) > self._limit:
            cache.popitem(last=False)

    def _chunk(self, k: int) -> tuple[bytes, array[int]]:
        cached = self._chunks.get(k)
        if cached is not None:
            self._chunks.move_to_end(k)
            return cached
        lo = k * self.CHUNK
        hi = min(self._count, lo + self.CHUNK)
        enc, build = self._encode, self._make
        parts = [enc(build(i)) for i in range(lo, hi)]
        for i in (j for j in self._patched if lo <= j < hi):
            parts[i - lo] = self._patched[i]
        parts.append(b"")
        blob = b",".join(parts)  # every event followed by a comma
        offsets = array("I", accumulate((len(p) + 1 for p in parts[:-1]), initial=0))
        self._keep(self._chunks, k, (blob, offsets))
        return blob, offsets

    def warm(self, stop: threading.Event | None = None, *, hold: bool = False) -> None:
        """Encode the first events now, as many as the cache keeps; with ``hold``, every
        event, kept from then on (a benchmark's server, timed warm, memory no object). On a
        thread, ``stop`` ends it between two chunks (a command stopped meanwhile)."""
        if hold:
            self._limit = None
        chunks = -(-self._count // self.CHUNK)
        for k in range(chunks if hold else min(self.CACHE, chunks)):
            if stop is not None and stop.is_set():
                return
            self._chunk(k)

    def event_json(self, i: int) -> bytes:
        """The JSON bytes of event ``i``, as served."""
        blob, off = self._chunk(i // self.CHUNK)
        r = i % self.CHUNK
        return blob[off[r] : off[r + 1] - 1]

    def join(self, indices: Sequence[int]) -> bytes:
        """The events at ``indices`` as the inside of a JSON array (``{..},{..}``)."""
        if not indices:
            return b""
        size = self.CHUNK
        if isinstance(indices, range) and indices.step == 1:
            pieces: list[bytes | memoryview] = []
            lo, hi = indices.start, indices.stop
            k = lo // size
            while lo < hi:
                blob, off = self._chunk(k)
                end = min(hi, (k + 1) * size)
                pieces.append(memoryview(blob)[off[lo - k * size] : off[end - k * size]])
                lo, k = end, k + 1
            out = b"".join(pieces)
            return out[:-1]
        if isinstance(indices, range) and indices.step == -1:
            return self._join_reversed(indices)
        # any other order: consecutive indices mostly share a chunk, so look it up once
        parts = []
        chunk = self._chunk
        base = -2 * size  # no chunk loaded yet
        blob, off = b"", array("I")
        for i in indices:
            if not base <= i < base + size:
                blob, off = chunk(i // size)
                base = i - i % size
            r = i - base
            parts.append(blob[off[r] : off[r + 1] - 1])
        return b",".join(parts)

    def _rchunk(self, k: int) -> tuple[bytes, array[int]]:
        """Chunk ``k`` with its events in reverse order (built on first use)."""
        cached = self._rchunks.get(k)
        if cached is not None:
            self._rchunks.move_to_end(k)
            return cached
        blob, off = self._chunk(k)
        parts = [blob[off[r] : off[r + 1]] for r in range(len(off) - 2, -1, -1)]
        offsets = array("I", accumulate((len(p) for p in parts), initial=0))
        cached = (b"".join(parts), offsets)
        self._keep(self._rchunks, k, cached)
        return cached

    def _join_reversed(self, indices: range) -> bytes:
        """A descending run (``sortReverse=true`` pages): slices of reversed chunks."""
        size = self.CHUNK
        pieces: list[memoryview] = []
        hi, lo = indices.start, indices.stop  # hi included, lo excluded
        while hi > lo:
            k = hi // size
            base = k * size
            blob, off = self._rchunk(k)
            last = len(off) - 2  # reversed position of the chunk's first event
            stop = max(lo, base - 1)
            pieces.append(memoryview(blob)[off[last - (hi - base)] : off[last - (stop - base)]])
            hi = stop
        return b"".join(pieces)[:-1]
