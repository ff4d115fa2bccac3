"""Decoding responses and encoding request bodies, with decoders built once and reused.

``decode`` turns a body into one model, or raises :class:`~asyncwifi.errors.DecodeError`
naming the JSON path. ``decode_page`` decodes a list page (contacts, events, hotspots,
segments) without ever losing a good record to a bad one:

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
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeAlias, TypeVar, overload

import msgspec

from asyncwifi.errors import DecodeError, ValidationError
from asyncwifi.models._auth import ErrorBody, LoginRequest, LoginResponse
from asyncwifi.models._base import Model
from asyncwifi.models._contacts import Contact, ContactPage
from asyncwifi.models._events import Event, EventKey, EventKeyPage, EventPage
from asyncwifi.models._generic import GenericResponse
from asyncwifi.models._hotspots import (
    Hotspot,
    HotspotCreate,
    HotspotDeleteResult,
    HotspotEnvelope,
    HotspotPage,
    HotspotUpdate,
    HotspotWriteResult,
)
from asyncwifi.models._identity import record_id, undecoded
from asyncwifi.models._segments import Segment, SegmentPage

__all__ = [
    "DecodedPage",
    "ItemError",
    "decode",
    "decode_generic",
    "decode_page",
    "encode",
    "generic_objects",
]

#: a body as read from the network (bytes, or a view of a reused buffer)
Body: TypeAlias = bytes | bytearray | memoryview
#: what the decoders accept: a body, or JSON text
JsonInput: TypeAlias = Body | str

log = logging.getLogger("asyncwifi.decode")

T = TypeVar("T")
EnvelopeT = TypeVar("EnvelopeT", bound=Model)
ItemT = TypeVar("ItemT", bound=Model)
R = TypeVar("R", bound=Model)

#: the largest excerpt of a body kept on a DecodeError
EXCERPT_BYTES = 1024
#: what msgspec raises on bad input: invalid UTF-8 inside a JSON string comes out as
#: UnicodeDecodeError, not msgspec.DecodeError; deep nesting as RecursionError
_DECODE_FAILURES = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)

_ENCODER = msgspec.json.Encoder()
#: spec §2 types every count as "number", and a JSON writer may well write 25 as 25.0.
#: The one rule: a record's numbers are ``int | float`` in the models (read as written,
#: never costing the record); the envelope's counts, which the scroll computes with
#: (``count``, ``totalCount``, ``size``), are ints, and responses are read in msgspec's lax
#: mode (``strict=False``) so that an integral float is read as one; a count that is no
#: whole number is unknown, not a lost page (``_lenient_envelope``). Lax mode also reads a
#: number, a boolean or null written as text as one; a string field takes only a string.
#: Request bodies are checked strictly (:func:`encode`): what the SDK sends is exact.
RESPONSES_STRICT = False
_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {
    t: msgspec.json.Decoder(t, strict=RESPONSES_STRICT)
    for t in (
        ErrorBody,
        LoginRequest,
        LoginResponse,
        Contact,
        ContactPage,
        Event,
        EventPage,
        Hotspot,
        HotspotCreate,
        HotspotDeleteResult,
        HotspotEnvelope,
        HotspotPage,
        HotspotUpdate,
        HotspotWriteResult,
        Segment,
        SegmentPage,
    )
}
_ANY_DECODER: msgspec.json.Decoder[Any] = msgspec.json.Decoder()
# bodies that carry a secret (the client secret, a token): their DecodeError keeps no excerpt
_SECRET_BODIES: frozenset[Any] = frozenset({LoginRequest, LoginResponse})

# msgspec appends " - at `$.a[3].b`" to a validation error's message
_AT_PATH = re.compile(r" - at `(\$[^`]*)`$")
_AT_BYTE = re.compile(r"\(byte (\d+)\)")


def _decoder(type_: Any) -> msgspec.json.Decoder[Any]:
    try:
        return _DECODERS[type_]
    except KeyError:
        # a type not known in advance: build its decoder once, then reuse it
        return _DECODERS.setdefault(type_, msgspec.json.Decoder(type_, strict=RESPONSES_STRICT))


#: the strict decoders that check a request body against its own model (see ``encode``)
_STRICT: dict[Any, msgspec.json.Decoder[Any]] = {}


def _strict(type_: Any) -> msgspec.json.Decoder[Any]:
    try:
        return _STRICT[type_]
    except KeyError:
        return _STRICT.setdefault(type_, msgspec.json.Decoder(type_))


def _split_path(message: str) -> tuple[str, str | None]:
    """Split msgspec's message into (message without the path, ``$...`` path or None)."""
    match = _AT_PATH.search(message)
    if match is None:
        return message, None
    return message[: match.start()], match.group(1)


def _excerpt(data: JsonInput, message: str) -> bytes:
    """A bounded excerpt of ``data``: around the failing byte when msgspec names it."""
    raw = data.encode() if isinstance(data, str) else data
    match = _AT_BYTE.search(message)
    start = max(0, int(match.group(1)) - EXCERPT_BYTES // 2) if match else 0
    return bytes(raw[start : start + EXCERPT_BYTES])


def _error(exc: Exception, data: JsonInput, what: str) -> DecodeError:
    message = str(exc)
    _, path = _split_path(message)
    return DecodeError(f"cannot decode {what}: {message}", path=path, raw=_excerpt(data, message))


def _name(type_: Any) -> str:
    return getattr(type_, "__name__", None) or repr(type_)


def decode(data: JsonInput, type_: type[T], *, what: str = "") -> T:
    """Decode a JSON body into ``type_``.

    Raises ``DecodeError`` (and nothing else) when the body is not JSON or does not match:
    its ``path`` is the JSON path of the bad value (``$.hotspot.latitude``) when there is
    one, its ``raw`` a bounded excerpt of the body. ``what`` names the body in the message.
    """
    try:
        result: T = _decoder(type_).decode(data)
    except _DECODE_FAILURES as exc:
        error = _error(exc, data, what or _name(type_))
        if type_ in _SECRET_BODIES:
            error.raw = None
        raise error from exc
    return result


def decode_generic(data: JsonInput, *, what: str = "") -> GenericResponse:
    """Decode a body whose shape the spec does not show (see :mod:`.generic`).

    An empty body gives ``{}``; a JSON object a ``dict``; any other JSON value
    ``{"data": value}``. Bad JSON raises ``DecodeError``.
    """
    if not (data.strip() if isinstance(data, bytes | bytearray | str) else bytes(data).strip()):
        return {}
    try:
        value = _ANY_DECODER.decode(data)
    except _DECODE_FAILURES as exc:
        raise _error(exc, data, what or "response") from exc
    return value if isinstance(value, dict) else {"data": value}


def generic_objects(response: GenericResponse) -> int:
    """The objects (spec §8) of a response whose shape is not shown: the records of its first
    list member (a contact's events, devices, accountings), else one (a write's object)."""
    records = next((v for v in response.values() if isinstance(v, list)), None)
    return 1 if records is None else len(records)


def encode(obj: Any) -> bytes:
    """Encode a request body to JSON (camelCase names, ``UNSET`` fields left out).

    A model's encoded body is checked against the model's own field types, so a wrongly
    typed value raises ``ValidationError`` naming the field before any request is spent.
    """
    try:
        body = _ENCODER.encode(obj)
    except (msgspec.EncodeError, TypeError, ValueError) as exc:
        raise ValidationError(f"cannot encode {type(obj).__name__}: {exc}") from exc
    if isinstance(obj, Model):
        try:
            _strict(type(obj)).decode(body)
        except msgspec.ValidationError as exc:
            message, path = _split_path(str(exc))
            where = f" at {path}" if path else ""
            raise ValidationError(f"invalid {type(obj).__name__}{where}: {message}") from None
    return body


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
        self.typed: msgspec.json.Decoder[Any] = _decoder(envelope)
        self.items: msgspec.json.Decoder[Any] = _decoder(item)
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
    except _DECODE_FAILURES:
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
    except _DECODE_FAILURES:
        raise _error(failure, data, kind.what) from failure  # not even a JSON object
    values: dict[str, Any] = {}
    for member in msgspec.structs.fields(kind.raw_type):
        raw = members.get(member.encode_name)
        if raw is None:
            continue
        try:
            values[member.name] = msgspec.json.decode(
                raw, type=member.type, strict=RESPONSES_STRICT
            )
        except _DECODE_FAILURES as exc:
            if member.name not in kind.counts:
                raise _error(failure, data, kind.what) from failure
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
    except _DECODE_FAILURES as exc:
        raise _error(exc, data, kind.what) from exc
    raws: list[msgspec.Raw] = getattr(raw_env, kind.field) or []
    decode_item = kind.items.decode
    items: list[Any] = []
    good_raws: list[msgspec.Raw] = []
    errors: list[ItemError] = []
    for index, raw in enumerate(raws):
        try:
            items.append(decode_item(raw))
        except _DECODE_FAILURES as exc:
            message, sub = _split_path(str(exc))
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
