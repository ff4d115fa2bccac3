"""List pages (contacts, events, hotspots, segments), decoded without ever losing a good
record to a bad one:

* fast path: one msgspec call decodes the whole typed envelope;
* ``keep_raw=True``: a second msgspec pass reads the item list as ``msgspec.Raw`` (the
  server's exact bytes, zero-copy views of the body), aligned with the typed items;
* if the fast path fails, the envelope is decoded with raw items and each item is decoded
  on its own: good items are kept, each bad one becomes an :class:`ItemError` (index, JSON
  path, message, raw bytes) on ``page.errors`` and, when given, through ``on_item_error``.
  A malformed envelope (bad JSON, a metadata field of the wrong type) raises ``DecodeError``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

import msgspec

from asyncwifi.errors import DecodeError, ValidationError
from asyncwifi.models._base import Model
from asyncwifi.models._contacts import Contact, ContactPage
from asyncwifi.models._decode import (
    DECODE_FAILURES,
    RESPONSES_STRICT,
    Body,
    decode_error,
    decoder_for,
    split_path,
)
from asyncwifi.models._events import Event, EventKey, EventKeyPage, EventPage
from asyncwifi.models._hotspots import Hotspot, HotspotPage
from asyncwifi.models._identity import record_id, undecoded
from asyncwifi.models._segments import Segment, SegmentPage

__all__ = ["DecodedPage", "ItemError", "decode_page"]

log = logging.getLogger("asyncwifi.decode")

EnvelopeT = TypeVar("EnvelopeT", bound=Model)
ItemT = TypeVar("ItemT", bound=Model)
R = TypeVar("R", bound=Model)


@dataclass(frozen=True, slots=True)
class ItemError:
    """One list item that did not decode; its page's other items were kept.

    ``path`` is the JSON path in the whole body (``$.events[17].visit.duration``),
    ``raw`` the item's exact bytes as the server sent them, ``item`` what could still be
    read of it (its id and, for an event, its UTC time), and :attr:`id` its id: the same
    the record would have had decoded (see ``asyncwifi.models._identity``).
    """

    index: int
    path: str
    message: str
    raw: bytes
    item: Any = field(default=None, repr=False)

    @property
    def id(self) -> str:
        """The record's id, read from its bytes, else ``sha256:`` and their digest."""
        return record_id(self.item, self.raw)

    def to_exception(self) -> DecodeError:
        """This error as a ``DecodeError`` (to raise it, or log it with a traceback)."""
        return DecodeError(
            f"item {self.index} at {self.path}: {self.message}", path=self.path, raw=self.raw
        )


@dataclass(frozen=True, slots=True)
class DecodedPage(Generic[EnvelopeT, ItemT]):
    """One decoded list page.

    ``envelope`` is the typed envelope (``generated``, ``count``, ``s_id``/``scroll_id``, ...)
    whose item list is ``items``: the items that decoded, in order. ``raw_items`` (with
    ``keep_raw``) holds the server's exact bytes of each of ``items``, index for index.
    ``errors`` lists the items that did not decode; they are in neither list.
    """

    envelope: EnvelopeT
    items: list[ItemT]
    raw_items: list[msgspec.Raw] | None = None
    errors: list[ItemError] = field(default_factory=list)

    @property
    def objects(self) -> int:
        """The records the server returned, decoded or not (spec §8: each is an object)."""
        return len(self.items) + len(self.errors)


class _PageKind:
    """What ``decode_page`` needs to know about one envelope type, decoders built once."""

    __slots__ = (
        "counts",
        "envelope",
        "field",
        "item",
        "items",
        "key",
        "raw_envelope",
        "raw_items",
        "raw_type",
        "typed",
        "what",
        "wire",
    )

    def __init__(
        self, envelope: type[Model], items_field: str, item: type[Model], what: str
    ) -> None:
        self.envelope = envelope
        self.field = items_field
        self.item = item
        self.what = what
        raw_list = list[msgspec.Raw] | None
        fields = msgspec.structs.fields(envelope)
        # the envelope with its items left as raw bytes: for the fallback path
        raw_env = msgspec.defstruct(
            f"_Raw{envelope.__name__}",
            [(f.name, raw_list if f.name == items_field else f.type, None) for f in fields],
            bases=(Model,),
        )
        # only the item list, as raw bytes: the cheap second pass of keep_raw
        raw_only = msgspec.defstruct(
            f"_RawItems{envelope.__name__}", [(items_field, raw_list, None)], bases=(Model,)
        )
        self.typed: msgspec.json.Decoder[Any] = decoder_for(envelope)
        self.items: msgspec.json.Decoder[Any] = decoder_for(item)
        #: the envelope with raw items (a Struct type)
        self.raw_type: Any = raw_env
        #: the envelope's counts (``count``, ``totalCount``, ``size``): one that cannot be
        #: read is unknown, not a lost page (see ``_lenient_envelope``)
        self.counts = frozenset(f.name for f in fields if f.type == int | None)
        self.raw_envelope: msgspec.json.Decoder[Any] = msgspec.json.Decoder(
            raw_env, strict=RESPONSES_STRICT
        )
        self.raw_items: msgspec.json.Decoder[Any] = msgspec.json.Decoder(
            raw_only, strict=RESPONSES_STRICT
        )
        #: the item list's name on the wire, for JSON paths
        self.wire: str = next(f.encode_name for f in fields if f.name == items_field)
        #: the item list's member as compact JSON writes it: ``"events":[``
        self.key: bytes = b'"' + self.wire.encode() + b'":['


_KINDS: dict[type[Model], _PageKind] = {
    k.envelope: k
    for k in (
        _PageKind(ContactPage, "customers", Contact, "contact page"),
        _PageKind(EventPage, "events", Event, "event page"),
        _PageKind(EventKeyPage, "events", EventKey, "event page"),
        _PageKind(HotspotPage, "hotspots", Hotspot, "hotspot page"),
        _PageKind(SegmentPage, "segments", Segment, "segment page"),
    )
}
#: the same, by record type: users name what they want (``decode_page(body, Event)``)
_BY_RECORD: dict[type[Model], _PageKind] = {k.item: k for k in _KINDS.values()}


@overload
def decode_page(
    data: Body,
    page_type: type[ContactPage],
    *,
    keep_raw: bool = ...,
    on_item_error: Callable[[ItemError], None] | None = ...,
) -> DecodedPage[ContactPage, Contact]: ...
@overload
def decode_page(
    data: Body,
    page_type: type[EventPage],
    *,
    keep_raw: bool = ...,
    on_item_error: Callable[[ItemError], None] | None = ...,
) -> DecodedPage[EventPage, Event]: ...
@overload
def decode_page(
    data: Body,
    page_type: type[HotspotPage],
    *,
    keep_raw: bool = ...,
    on_item_error: Callable[[ItemError], None] | None = ...,
) -> DecodedPage[HotspotPage, Hotspot]: ...
@overload
def decode_page(
    data: Body,
    page_type: type[SegmentPage],
    *,
    keep_raw: bool = ...,
    on_item_error: Callable[[ItemError], None] | None = ...,
) -> DecodedPage[SegmentPage, Segment]: ...
@overload
def decode_page(
    data: Body,
    page_type: type[R],
    *,
    keep_raw: bool = ...,
    on_item_error: Callable[[ItemError], None] | None = ...,
) -> DecodedPage[Any, R]: ...
def decode_page(
    data: Body,
    page_type: type[Model],
    *,
    keep_raw: bool = False,
    on_item_error: Callable[[ItemError], None] | None = None,
) -> DecodedPage[Any, Any]:
    """Decode a list page, keeping every good item even when some are malformed.

    ``page_type`` names the records (``Contact``, ``Event``, ``Hotspot``, ``Segment``) or,
    inside the SDK, their envelope (``EventPage`` ...).
    ``keep_raw`` also returns each item's exact bytes (``raw_items``). Each item that does
    not decode is reported on ``page.errors`` and, when given, passed to ``on_item_error``
    (in order, before this returns; an exception it raises propagates). A malformed
    envelope raises ``DecodeError``.
    """
    kind = _KINDS.get(page_type) or _BY_RECORD.get(page_type)
    if kind is None:
        known = ", ".join(t.__name__ for t in _BY_RECORD)
        name = getattr(page_type, "__name__", page_type)
        raise ValidationError(f"decode_page knows {known}, not {name}")
    try:
        envelope = kind.typed.decode(data)
    except DECODE_FAILURES:
        return _decode_page_slowly(kind, data, keep_raw, on_item_error)
    items = getattr(envelope, kind.field)
    if items is None:
        items = []
    raw_items: list[msgspec.Raw] | None = None
    if keep_raw:
        # the typed pass succeeded, so this pass (same bytes, laxer types) cannot fail
        raw_items = getattr(kind.raw_items.decode(data), kind.field) or []
    return DecodedPage(envelope, items, raw_items)


#: a page's top-level members, each as its exact bytes (for :func:`_lenient_envelope`)
_MEMBERS: msgspec.json.Decoder[dict[str, msgspec.Raw]] = msgspec.json.Decoder(
    dict[str, msgspec.Raw]
)


def _lenient_envelope(kind: _PageKind, data: Body, failure: msgspec.ValidationError) -> Any:
    """The envelope of a page whose count cannot be read (a ``totalCount`` of 250.5, spec
    §2: counts are "number"): that count is read as unknown (``None``) with a warning
    naming it, and the records are kept. Any other member that does not match (a scroll id
    that is no string, an item list that is no list) is the ``failure`` it was:
    ``DecodeError``; nothing of such a page could be trusted."""
    try:
        members = _MEMBERS.decode(data)
    except DECODE_FAILURES:
        raise decode_error(failure, data, kind.what) from failure  # not even a JSON object
    values: dict[str, Any] = {}
    for member in msgspec.structs.fields(kind.raw_type):
        raw = members.get(member.encode_name)
        if raw is None:
            continue
        try:
            values[member.name] = msgspec.json.decode(
                raw, type=member.type, strict=RESPONSES_STRICT
            )
        except DECODE_FAILURES as exc:
            if member.name not in kind.counts:
                raise decode_error(failure, data, kind.what) from failure
            log.warning(
                "%s: $.%s (%s) is not a whole number (%s): taken as unknown",
                kind.what,
                member.encode_name,
                bytes(raw)[:64].decode("utf-8", "replace"),
                exc,
            )
    return kind.raw_type(**values)


def _decode_page_slowly(
    kind: _PageKind,
    data: Body,
    keep_raw: bool,
    on_item_error: Callable[[ItemError], None] | None,
) -> DecodedPage[Any, Any]:
    """The fallback: raw envelope once, then item by item; bad items become ItemErrors."""
    try:
        raw_env = kind.raw_envelope.decode(data)
    except msgspec.ValidationError as exc:
        raw_env = _lenient_envelope(kind, data, exc)
    except DECODE_FAILURES as exc:
        raise decode_error(exc, data, kind.what) from exc
    raws: list[msgspec.Raw] = getattr(raw_env, kind.field) or []
    decode_item = kind.items.decode
    items: list[Any] = []
    good_raws: list[msgspec.Raw] = []
    errors: list[ItemError] = []
    for index, raw in enumerate(raws):
        try:
            items.append(decode_item(raw))
        except DECODE_FAILURES as exc:
            message, sub = split_path(str(exc))
            path = f"$.{kind.wire}[{index}]" + (sub[1:] if sub else "")
            error = ItemError(index, path, message, bytes(raw), undecoded(raw, kind.item))
            errors.append(error)
            if on_item_error is not None:
                on_item_error(error)
        else:
            if keep_raw:
                good_raws.append(raw)
    meta = {f: getattr(raw_env, f) for f in kind.envelope.__struct_fields__ if f != kind.field}
    envelope = kind.envelope(**meta, **{kind.field: items})
    return DecodedPage(envelope, items, good_raws if keep_raw else None, errors)
