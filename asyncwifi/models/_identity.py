"""A record's identity: one rule, for every resource and every record shape.

DESIGN, "Record identity and time": the backfill, the sync, the scroll streams and the dlt
source name a record here and nowhere else, so that one record has one id in all of them.

- A record's id is the first non-empty string among its id fields: an event's ``id``, else
  ``event.id`` (the nested shape, observed.md); a contact's ``cid``; a hotspot's or a
  segment's ``id``. The typed models read those fields (:class:`~asyncwifi.models.Event` folds
  ``event.id`` into ``id``); a record that failed typed decoding is read from its bytes by
  the same rule (:func:`undecoded`), so it keeps its real id.
- A record with no id (no such field holds a non-empty string, or the bytes are not even a
  JSON object) is named by its content: ``sha256:`` and the hex digest of its exact bytes.
  The same bytes get the same id in every run and every tool, and two records with the same
  bytes are one record. Without its bytes (a stream opened without ``keep_raw``) such a
  record has no id (``None``), and a stream never takes it for another record.
- An event's UTC time is :attr:`Event.time <asyncwifi.models.Event.time>` (``when.createdAt``,
  else ``date``; none on the spec's flat records); :func:`undecoded` reads it from the bytes.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Sequence
from typing import Any, TypeAlias, TypeVar, overload

import msgspec

from asyncwifi.models._base import Model
from asyncwifi.models._contacts import Contact
from asyncwifi.models._events import EventKey, EventWhen

__all__ = ["content_id", "record_id", "record_ids", "undecoded"]

#: a record's exact bytes, as a page keeps them
RawBytes: TypeAlias = bytes | bytearray | memoryview | msgspec.Raw
M = TypeVar("M", bound=Model)


def content_id(raw: RawBytes) -> str:
    """The id of a record that has none: ``sha256:`` and the digest of its exact bytes."""
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def _id_field(kind: type[Any]) -> str:
    return "cid" if kind is Contact else "id"


@overload
def record_id(item: Any, raw: None = None) -> str | None: ...
@overload
def record_id(item: Any, raw: RawBytes) -> str: ...
def record_id(item: Any, raw: RawBytes | None = None) -> str | None:
    """The id of a typed record (see the module docstring); with its bytes, ``sha256:...``
    when it has none, else ``None``."""
    # the usual record: one type test and one attribute (the streams call it per record)
    ident: str | None = item.cid if type(item) is Contact else getattr(item, "id", None)
    if ident:
        return ident
    return None if raw is None else content_id(raw)


@overload
def record_ids(items: Sequence[Any]) -> list[str | None]: ...
@overload
def record_ids(items: Sequence[Any], raws: Sequence[RawBytes]) -> list[str]: ...
@overload
def record_ids(items: Sequence[Any], raws: Sequence[RawBytes] | None) -> list[str | None]: ...
def record_ids(items: Sequence[Any], raws: Sequence[RawBytes] | None = None) -> list[Any]:
    """:func:`record_id` of each record of a page (``raws`` aligned with ``items``), read in
    one C pass when every record has an id (the usual page)."""
    if not items:
        return []
    ids: list[Any] = list(map(operator.attrgetter(_id_field(type(items[0]))), items))
    if None in ids or "" in ids:
        if raws is None:
            return [i or None for i in ids]
        return [i or content_id(raw) for i, raw in zip(ids, raws, strict=True)]
    return ids


def _member(data: object, name: str) -> Any:
    return data.get(name) if isinstance(data, dict) else None


def _text(data: object, name: str) -> str | None:
    value = _member(data, name)
    return value if isinstance(value, str) else None


def undecoded(raw: RawBytes, kind: type[M]) -> M:
    """What can be read of a record that failed typed decoding, as a ``kind`` with only its
    id filled (and an event's UTC time): by the same rule as the typed models, so that
    :func:`record_id` names it as it would have named it decoded."""
    try:
        data = msgspec.json.decode(raw)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        data = None
    if issubclass(kind, EventKey):
        created = _text(_member(data, "when"), "createdAt")
        return kind(
            id=_text(data, "id") or _text(_member(data, "event"), "id") or None,
            date=_text(data, "date"),
            when=None if created is None else EventWhen(created_at=created),
        )
    field = _id_field(kind)
    return kind(**{field: _text(data, field) or None})
