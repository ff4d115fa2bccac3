"""A record's identity, at its one owner (``asyncwifi.models._identity``): the same id from
the typed record and, when it does not decode, from its bytes, on every record shape; a
record with no id named by its content; an event's UTC time read from its bytes too."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from asyncwifi.models import Contact, Event, Hotspot, Segment, decode, decode_page
from asyncwifi.models._contacts import ContactPage
from asyncwifi.models._events import EventPage
from asyncwifi.models._hotspots import HotspotPage
from asyncwifi.models._identity import content_id, record_id, record_ids, undecoded
from asyncwifi.models._segments import SegmentPage

WHEN = "2024-03-10T17:30:05.250Z"
TIME = datetime(2024, 3, 10, 17, 30, 5, 250_000, tzinfo=UTC)
NESTED_WHEN = {"createdAt": WHEN, "createdAtLocal": "2024-03-10T10:30:05.250Z"}

#: (record, its model, its page, the page's list, a field that breaks typed decoding, id, time)
SHAPES: dict[str, tuple[dict[str, Any], type[Any], type[Any], str, dict[str, Any], Any, Any]] = {
    "flat event": ({"type": "visit", "id": "e1"}, Event, EventPage, "events",
                   {"visit": "broken"}, "e1", None),
    "dated event": ({"type": "visit", "id": "e1", "date": WHEN}, Event, EventPage, "events",
                    {"visit": "broken"}, "e1", TIME),
    "nested event": ({"event": {"type": "arriving", "id": "e1"}, "when": NESTED_WHEN}, Event,
                     EventPage, "events", {"visit": "broken"}, "e1", TIME),
    "top id over nested": ({"id": "top", "event": {"id": "inner"}}, Event, EventPage,
                           "events", {"visit": "broken"}, "top", None),
    "empty id, nested one": ({"id": "", "event": {"id": "inner"}}, Event, EventPage,
                             "events", {"visit": "broken"}, "inner", None),
    "contact": ({"cid": "c1", "id": "not-this"}, Contact, ContactPage, "customers",
                {"logins": "many"}, "c1", None),
    "hotspot": ({"id": "h1"}, Hotspot, HotspotPage, "hotspots", {"latitude": "north"},
                "h1", None),
    "segment": ({"id": "s1"}, Segment, SegmentPage, "segments", {"audience": "lots"},
                "s1", None),
    # no id at all: named by the content of the record
    "flat, no id": ({"type": "visit", "date": WHEN}, Event, EventPage, "events",
                    {"visit": "broken"}, None, TIME),
    "nested, no id": ({"event": {"type": "visit"}, "when": NESTED_WHEN}, Event, EventPage,
                      "events", {"visit": "broken"}, None, TIME),
    "empty ids": ({"id": "", "event": {"id": ""}}, Event, EventPage, "events",
                  {"visit": "broken"}, None, None),
    "a number is no id": ({"id": 17}, Hotspot, HotspotPage, "hotspots", {}, None, None),
    "contact, no cid": ({"cid": "", "id": "h1"}, Contact, ContactPage, "customers",
                        {"logins": "many"}, None, None),
}  # fmt: skip


def _encode(record: dict[str, Any]) -> bytes:
    return msgspec.json.encode(record)


@pytest.mark.parametrize("shape", SHAPES)
def test_a_record_has_one_id_decoded_or_not(shape: str) -> None:
    record, model, page_type, items, breaking, ident, time = SHAPES[shape]
    raw = _encode(record)
    expected = ident if ident is not None else content_id(raw)
    if not isinstance(record.get("id", ""), int):
        decoded = decode(raw, model)
        assert record_id(decoded, raw) == expected
        assert record_id(decoded) == ident  # without its bytes, a record with no id has none
        if model is Event:
            assert decoded.time == time
    # the same record when a field of it does not decode: its id read from its bytes
    bad = _encode({**record, **breaking})
    page = decode_page(b'{"%s":[%s]}' % (items.encode(), bad), page_type)
    assert page.items == []
    (error,) = page.errors
    assert error.id == (ident if ident is not None else content_id(bad))
    assert record_id(undecoded(bad, model), bad) == error.id
    if model is Event:
        assert error.item.time == time


@pytest.mark.parametrize("raw", [b"[1, 2]", b"17", b'"e1"', b"{not json", b"\xff"])
def test_bytes_that_are_not_a_record_are_named_by_their_content(raw: bytes) -> None:
    for model in (Event, Contact, Hotspot):
        item = undecoded(raw, model)
        assert record_id(item) is None
        assert (
            record_id(item, raw) == content_id(raw) == f"sha256:{hashlib.sha256(raw).hexdigest()}"
        )


def test_a_page_of_ids_reads_as_each_id_alone() -> None:
    raws = [_encode(r) for r in ({"id": "a"}, {"type": "x"}, {"id": ""}, {"id": "b"})]
    items = [decode(r, Event) for r in raws]
    assert record_ids(items) == ["a", None, None, "b"]
    assert record_ids(items, raws) == [record_id(i, r) for i, r in zip(items, raws, strict=True)]
    assert record_ids(items[:1] + items[3:], raws[:1] + raws[3:]) == ["a", "b"]
    contacts = [Contact(cid="c1"), Contact(cid="c2")]
    assert record_ids(contacts) == ["c1", "c2"]
    assert record_ids([]) == []


def test_the_same_bytes_are_one_record_and_other_bytes_another() -> None:
    one, same, other = b'{"type":"visit"}', b'{"type":"visit"}', b'{"type": "visit"}'
    assert content_id(one) == content_id(same) != content_id(other)
