"""Decoding responses and encoding request bodies, with decoders built once and reused.

``decode`` turns a body into one model, or raises :class:`~asyncwifi.errors.DecodeError`
naming the JSON path; ``encode`` checks a request body against its model before it is
sent. A list page is ``_pages``' (``decode_page``), on the decoders and errors built here.
"""

from __future__ import annotations

import re
from typing import Any, TypeAlias, TypeVar

import msgspec

from asyncwifi.errors import DecodeError, ValidationError
from asyncwifi.models._auth import ErrorBody, LoginRequest, LoginResponse
from asyncwifi.models._base import Model
from asyncwifi.models._contacts import Contact, ContactPage
from asyncwifi.models._events import Event, EventPage
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
from asyncwifi.models._segments import Segment, SegmentPage

__all__ = [
    "DECODE_FAILURES",
    "EXCERPT_BYTES",
    "RESPONSES_STRICT",
    "Body",
    "JsonInput",
    "decode",
    "decode_error",
    "decode_generic",
    "decoder_for",
    "encode",
    "generic_objects",
    "split_path",
]

#: a body as read from the network (bytes, or a view of a reused buffer)
Body: TypeAlias = bytes | bytearray | memoryview
#: what the decoders accept: a body, or JSON text
JsonInput: TypeAlias = Body | str

T = TypeVar("T")

#: the largest excerpt of a body kept on a DecodeError
EXCERPT_BYTES = 1024
#: what msgspec raises on bad input: invalid UTF-8 inside a JSON string comes out as
#: UnicodeDecodeError, not msgspec.DecodeError; deep nesting as RecursionError
DECODE_FAILURES = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)

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


def decoder_for(type_: Any) -> msgspec.json.Decoder[Any]:
    """The lax decoder of ``type_`` (:data:`RESPONSES_STRICT`), built once and reused."""
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


def split_path(message: str) -> tuple[str, str | None]:
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


def decode_error(exc: Exception, data: JsonInput, what: str) -> DecodeError:
    """msgspec's failure to decode ``data`` (``what``) as a ``DecodeError``: its JSON path,
    a bounded excerpt of the body."""
    message = str(exc)
    _, path = split_path(message)
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
        result: T = decoder_for(type_).decode(data)
    except DECODE_FAILURES as exc:
        error = decode_error(exc, data, what or _name(type_))
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
    except DECODE_FAILURES as exc:
        raise decode_error(exc, data, what or "response") from exc
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
            message, path = split_path(str(exc))
            where = f" at {path}" if path else ""
            raise ValidationError(f"invalid {type(obj).__name__}{where}: {message}") from None
    return body
