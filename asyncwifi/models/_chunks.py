"""A big list page decoded a chunk at a time, as its records are consumed.

Decoding a 10,000-event page at once makes megabytes of objects: more than the CPU's cache,
so each record is created, read and freed from main memory, and the allocator's free lists
miss on every object. Decoding ~128 KiB of the body at a time, just before its records are
handed out, keeps a chunk's bytes and objects in the cache from creation to release: about a
quarter less CPU per record for a typed scroll stream.

How a page is cut, and why a cut can be trusted:

* The first ``"events":[`` (whitespace allowed) must be the items member: the body before
  it plus ``"events":[]}`` must decode as the page (so the member is one of the top-level
  object's, not text inside a string or a nested object). Its ``[`` starts the first chunk.
* Cuts are made at ``},{`` (whitespace allowed) roughly every ``chunk_bytes``. A chunk is
  decoded in place: the byte before it becomes ``[`` and the ``,`` after it ``]``. JSON is
  parsed the same way from the same state, so a chunk that starts where a record starts
  and decodes as a list ends where a record ends: a cut inside a string or a nested object
  cannot decode (it leaves a string or an object open). Chunks are decoded in order, so
  each starts where the previous one was proved to end.
* The tail (the records after the last cut, and the members after the list, where a scroll
  id may be) is decoded when the page arrives, because the stream needs the scroll id and
  the last record's time at once. It is only proved right once every chunk before it has
  decoded; if one does not (a malformed record, or a cut that was not a boundary), the rest
  of the page is decoded the careful way, record by record, and must agree with the tail.

A page that does not fit this (small, one huge record, a head or tail that does not
decode) is left to :func:`decode_page`, which decodes it whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from asyncwifi.errors import DecodeError
from asyncwifi.models._decode import _DECODE_FAILURES, _KINDS, ItemError, _decode_page_slowly

__all__ = ["SLICE_BYTES", "ChunkedPage", "chunk_page"]

#: bytes of body per chunk: its records and their objects stay in a core's L2 cache
SLICE_BYTES = 128 * 1024

_OPEN, _CLOSE = ord("["), ord("]")
#: between two records: the ``}`` ends one, group 1 is the ``,``, the ``{`` starts the next
_BETWEEN = re.compile(rb"\}\s*(,)\s*\{")
#: the items member's key, by wire name: ``"events":[``
_MEMBER = {
    k.wire: re.compile(rb'"' + re.escape(k.wire.encode()) + rb'"\s*:\s*\[') for k in _KINDS.values()
}


class ChunkedPage:
    """A page whose records are decoded chunk by chunk (see the module docstring).

    ``envelope``: the page's members (its item list holds the tail's records); ``tail``:
    the records after the last cut, already decoded. :meth:`batches` yields the records.
    """

    __slots__ = ("_chunks", "_data", "_kind", "_size", "_tail_envelope", "envelope", "tail")

    def __init__(
        self,
        data: bytearray,
        size: int,
        kind: Any,
        chunks: list[tuple[int, int]],
        envelope: Any,
        tail_envelope: Any,
    ) -> None:
        self._data = data
        self._size = size
        self._kind = kind
        self._chunks = chunks
        self._tail_envelope = tail_envelope
        self.envelope = envelope
        self.tail: list[Any] = getattr(tail_envelope, kind.field)

    def batches(self, on_item_error: Callable[[ItemError], None]) -> Iterator[list[Any]]:
        """The page's records, a chunk at a time, in order, then the tail's.

        Writes into the body (the brackets around each chunk): a page is read once. A record
        that does not decode is passed to ``on_item_error`` and left out, like
        :func:`decode_page` does; a page that cannot be read consistently raises
        :class:`DecodeError`.
        """
        data = self._data
        view = memoryview(data)
        decode = self._kind.item_list.decode
        delivered = 0
        try:
            for start, end in self._chunks:
                before, after = data[start - 1], data[end]
                data[start - 1], data[end] = _OPEN, _CLOSE
                try:
                    items: list[Any] = decode(view[start - 1 : end + 1])
                except _DECODE_FAILURES:
                    data[start - 1], data[end] = before, after
                    yield self._rest(start, delivered, on_item_error)
                    return
                delivered += len(items)
                yield items
        finally:
            view.release()
        yield self.tail

    def _rest(
        self, start: int, offset: int, on_item_error: Callable[[ItemError], None]
    ) -> list[Any]:
        """The records from ``start`` to the end, record by record; they must end with the
        tail already decoded, under the same members, or the page is not trusted."""
        kind = self._kind
        body = b"{" + kind.key + bytes(self._data[start : self._size])
        rest = _decode_page_slowly(kind, body, False, on_item_error, offset=offset)
        tail = self.tail
        fields = [f for f in kind.envelope.__struct_fields__ if f != kind.field]
        if rest.items[len(rest.items) - len(tail) :] != tail or any(
            getattr(rest.envelope, f) != getattr(self._tail_envelope, f) for f in fields
        ):
            raise DecodeError(
                f"cannot decode {kind.what}: its records could not be read consistently "
                f"(a malformed record after record {offset})",
                path=f"$.{kind.wire}[{offset}]",
            )
        return rest.items


def chunk_page(
    data: bytearray, size: int, page_type: type[Any], *, chunk_bytes: int = SLICE_BYTES
) -> ChunkedPage | None:
    """Cut the page in ``data[:size]`` into chunks, or ``None`` when it is not worth it or
    its layout does not allow it (the caller then decodes it whole with decode_page).

    Reads ``data`` only; :meth:`ChunkedPage.batches` writes into it later, so the caller
    must not reuse the buffer before the page is consumed.
    """
    kind = _KINDS[page_type]
    if size < 2 * chunk_bytes:
        return None
    found = _MEMBER[kind.wire].search(data, 0, size)
    if found is None:
        return None
    at, start = found.start(), found.end()
    key = kind.key
    chunks: list[tuple[int, int]] = []
    # the tail keeps half a chunk at least: the time cursor wants more than a few records
    last_cut = size - chunk_bytes // 2
    while (cut := _BETWEEN.search(data, start + chunk_bytes, last_cut)) is not None:
        chunks.append((start, cut.start(1)))  # from a record's "{" to the "," after one
        start = cut.end() - 1
    if not chunks:
        return None
    try:
        head = kind.typed.decode(bytes(data[:at]) + key + b"]}")
        tail = kind.typed.decode(b"{" + key + bytes(data[start:size]))
    except _DECODE_FAILURES:
        return None
    # members before the list come from the head, after it from the tail
    earlier = {
        f: getattr(head, f)
        for f in kind.envelope.__struct_fields__
        if f != kind.field and getattr(tail, f) is None and getattr(head, f) is not None
    }
    envelope = msgspec.structs.replace(tail, **earlier) if earlier else tail
    return ChunkedPage(data, size, kind, chunks, envelope, tail)
