"""decode/decode_page: errors name the JSON path, a bad record never costs a good one, and
keep_raw hands back the server's exact bytes."""

from __future__ import annotations

import contextlib
import json
from functools import cache
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asyncwifi.errors import AsyncWifiError, DecodeError, ValidationError
from asyncwifi.models import Contact, Event, ItemError, Policy, decode, decode_page
from asyncwifi.models._auth import ErrorBody
from asyncwifi.models._contacts import ContactPage
from asyncwifi.models._decode import EXCERPT_BYTES
from asyncwifi.models._events import EventPage
from asyncwifi.models._hotspots import HotspotEnvelope, HotspotPage
from asyncwifi.models._segments import SegmentPage
from tests.fixtures.models import (
    contact_page,
    dumps,
    event,
    hotspot_page,
    segment_page,
)

N_EVENTS = 2_000


@cache
def event_records() -> tuple[dict[str, Any], ...]:
    return tuple(event(i, seed=3) for i in range(N_EVENTS))


def page_body(
    items: list[bytes], *, key: bytes = b"events", meta: bytes = b'"status":"OK","count":2000'
) -> bytes:
    """An envelope built by hand from item chunks, so each chunk's position is known."""
    return (
        b"{"
        + meta
        + b',\n "scrollId": "sc-9",\n "'
        + key
        + b'" : [\n  '
        + (b" ,\n  ".join(items) + b'\n ],\n "xTail": {"a": [1, 2]}\n}')
    )


def chunk(record: dict[str, Any]) -> bytes:
    """One record formatted unlike msgspec would (indent, escaped non-ASCII)."""
    return json.dumps(record, indent=1, ensure_ascii=True).encode()


def with_bad_record(index: int, bad: dict[str, Any]) -> tuple[bytes, list[bytes]]:
    chunks = [chunk(r) for r in event_records()]
    chunks[index] = chunk(bad)
    return page_body(chunks), chunks


# --- decode ---------------------------------------------------------------------------


def test_decode_error_names_the_json_path() -> None:
    body = b'{"status":"OK","hotspot":{"id":"h","latitude":"north"}}'
    with pytest.raises(DecodeError) as info:
        decode(body, HotspotEnvelope)
    assert info.value.path == "$.hotspot.latitude"
    assert "$.hotspot.latitude" in str(info.value)
    assert "HotspotEnvelope" in str(info.value)
    assert info.value.raw == body
    assert isinstance(info.value.__cause__, msgspec.ValidationError)


def test_decode_error_in_a_list_names_the_index() -> None:
    page = contact_page(5)
    page["customers"][3]["metrics"]["countTotalVisits"] = "many"
    with pytest.raises(DecodeError) as info:
        decode(dumps(page), ContactPage, what="contact list")
    assert info.value.path == "$.customers[3].metrics.countTotalVisits"
    assert str(info.value).startswith("cannot decode contact list:")


def test_decode_error_raw_is_a_bounded_excerpt() -> None:
    body = dumps(contact_page(50))
    broken = body[:-1]  # truncated
    with pytest.raises(DecodeError) as info:
        decode(broken, ContactPage)
    assert info.value.path is None
    assert info.value.raw is not None
    assert len(info.value.raw) <= EXCERPT_BYTES < len(body)


def test_syntax_error_excerpt_is_around_the_bad_byte() -> None:
    body = b'{"message": "' + b"a" * 5000 + b'", "other": @}'
    with pytest.raises(DecodeError) as info:
        decode(body, ErrorBody)
    assert info.value.raw is not None
    assert b"@" in info.value.raw
    assert len(info.value.raw) <= EXCERPT_BYTES


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])  # + tests/fuzz
@given(
    data=st.binary(max_size=300)
    | st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
        max_leaves=30,
    ).map(lambda v: json.dumps(v).encode()),
    type_=st.sampled_from([Contact, ContactPage, Event, EventPage, HotspotPage, SegmentPage]),
)
def test_decode_raises_nothing_but_decode_error(data: bytes, type_: type[Any]) -> None:
    with contextlib.suppress(DecodeError):
        assert isinstance(decode(data, type_), type_)
    try:
        page = decode_page(data, type_) if type_.__name__.endswith("Page") else None
    except DecodeError:
        return
    if page is not None:
        assert isinstance(page.envelope, type_)


def test_decode_handles_absurd_nesting_as_a_decode_error() -> None:
    body = b'{"events": [{"xDeep": ' + b"[" * 100_000 + b"]" * 100_000 + b"}]}"
    with pytest.raises(DecodeError):
        decode(body, EventPage)
    # even skipping it recurses too deep: the page cannot be split, and says so
    with pytest.raises(DecodeError, match="recursion"):
        decode_page(body, EventPage)


# --- decode_page: fast path -----------------------------------------------------------


def test_fast_path_page_keeps_the_envelope_metadata() -> None:
    page = decode_page(dumps(contact_page(25, s_id="sid-7")), ContactPage)
    assert (page.envelope.s_id, page.envelope.total_count, page.envelope.count) == (
        "sid-7",
        175,
        25,
    )
    assert page.items is page.envelope.customers
    assert [c.cid for c in page.items] == [c["cid"] for c in contact_page(25)["customers"]]
    assert page.raw_items is None
    assert page.errors == []


def test_keep_raw_returns_byte_exact_slices_of_the_body() -> None:
    chunks = [chunk(r) for r in event_records()]
    body = page_body(chunks)
    page = decode_page(body, EventPage, keep_raw=True)
    assert page.errors == []
    assert page.raw_items is not None
    assert [bytes(r) for r in page.raw_items] == chunks
    assert page.envelope.scroll_id == "sc-9"
    # each raw item is the record the typed item came from, unknown fields included
    assert b'"xCustomerId"' in bytes(page.raw_items[0])
    assert decode(page.raw_items[10], Event) == page.items[10]


def test_keep_raw_on_contacts_preserves_unknown_fields() -> None:
    wire = contact_page(5)
    page = decode_page(dumps(wire), ContactPage, keep_raw=True)
    assert page.raw_items is not None
    assert [msgspec.json.decode(r) for r in page.raw_items] == wire["customers"]


@pytest.mark.parametrize("items", [b'"customers": null', b'"customers": []', b'"other": 1'])
@pytest.mark.parametrize("keep_raw", [False, True])
def test_an_empty_page_has_no_items(items: bytes, keep_raw: bool) -> None:
    page = decode_page(b'{"count": 0, ' + items + b"}", ContactPage, keep_raw=keep_raw)
    assert page.items == []
    assert page.raw_items == ([] if keep_raw else None)
    assert page.errors == []


def test_hotspot_and_segment_pages() -> None:
    hotspots = decode_page(dumps(hotspot_page(4)), HotspotPage)
    segments = decode_page(dumps(segment_page(3)), SegmentPage, keep_raw=True)
    assert len(hotspots.items) == 4
    assert hotspots.envelope.status == "OK"
    assert segments.envelope.size == 3
    assert segments.raw_items is not None
    assert len(segments.raw_items) == 3


def test_decode_page_refuses_a_type_that_is_not_a_record_of_a_page() -> None:
    with pytest.raises(
        ValidationError, match="Contact, Event, EventKey, Hotspot, Segment"
    ) as caught:
        decode_page(b"{}", Policy)
    assert isinstance(caught.value, AsyncWifiError)


def test_decode_page_by_record_type_is_the_page_decode() -> None:
    body = b'{"customers": [{"cid": "c1"}, {"cid": 2}], "totalCount": 2}'
    by_record, by_page = decode_page(body, Contact), decode_page(body, ContactPage)
    assert by_record.items == by_page.items == [Contact(cid="c1")]
    assert [e.path for e in by_record.errors] == ["$.customers[1].cid"]


# --- decode_page: one bad record among many -------------------------------------------


BAD_17 = event(17, "visit", seed=3) | {"visit": {"startAt": "x", "duration": "long"}}


def test_one_bad_record_does_not_cost_the_other_good_ones() -> None:
    body, chunks = with_bad_record(17, BAD_17)
    page = decode_page(body, EventPage)
    assert len(page.items) == N_EVENTS - 1
    expected_ids = [r["id"] for i, r in enumerate(event_records()) if i != 17]
    assert [e.id for e in page.items] == expected_ids  # order kept
    assert page.items is page.envelope.events
    assert (page.envelope.status, page.envelope.count, page.envelope.scroll_id) == (
        "OK",
        2000,
        "sc-9",
    )
    [error] = page.errors
    assert error.index == 17
    assert error.path == "$.events[17].visit.duration"
    assert "got `str`" in error.message
    assert error.raw == chunks[17]  # the server's exact bytes of the bad record


def test_bad_records_go_through_the_callback_too() -> None:
    body, _ = with_bad_record(17, BAD_17)
    seen: list[ItemError] = []
    page = decode_page(body, EventPage, on_item_error=seen.append)
    assert seen == page.errors
    assert [e.index for e in seen] == [17]
    assert len(page.items) == N_EVENTS - 1


def test_keep_raw_stays_aligned_with_items_after_a_bad_record() -> None:
    body, chunks = with_bad_record(17, BAD_17)
    page = decode_page(body, EventPage, keep_raw=True)
    assert page.raw_items is not None
    assert [bytes(r) for r in page.raw_items] == chunks[:17] + chunks[18:]
    assert all(decode(r, Event) == item for r, item in zip(page.raw_items, page.items, strict=True))


def test_several_kinds_of_bad_item_are_each_reported() -> None:
    good = [chunk(r) for r in event_records()[:6]]
    items = [good[0], b"null", good[1], b"42", good[2], b'{"id": 7}', good[3], b'{"survey":[]}']
    page = decode_page(page_body(items), EventPage)
    assert len(page.items) == 4
    assert [(e.index, e.path) for e in page.errors] == [
        (1, "$.events[1]"),
        (3, "$.events[3]"),
        (5, "$.events[5].id"),
        (7, "$.events[7].survey"),
    ]
    assert [e.raw for e in page.errors] == [b"null", b"42", b'{"id": 7}', b'{"survey":[]}']


def test_a_bad_contact_is_reported_with_its_path() -> None:
    wire = contact_page(10)
    wire["customers"][6]["age"] = [30]
    wire["customers"][6]["xNote"] = "kept in raw"
    page = decode_page(dumps(wire), ContactPage, keep_raw=True)
    assert [c.cid for c in page.items] == [
        c["cid"] for i, c in enumerate(wire["customers"]) if i != 6
    ]
    [error] = page.errors
    assert error.path == "$.customers[6].age"
    assert msgspec.json.decode(error.raw) == wire["customers"][6]
    assert (page.envelope.s_id, page.envelope.total_count) == ("scroll-1", 70)


def test_item_error_as_an_exception() -> None:
    body, _ = with_bad_record(3, BAD_17)
    [error] = decode_page(body, EventPage).errors
    exc = error.to_exception()
    assert isinstance(exc, DecodeError)
    assert isinstance(exc, AsyncWifiError)
    assert exc.path == "$.events[3].visit.duration"
    assert exc.raw == error.raw


def test_a_callback_that_raises_stops_decoding() -> None:
    body, _ = with_bad_record(5, BAD_17)

    def abort(error: ItemError) -> None:
        raise RuntimeError(f"stop at {error.index}")

    with pytest.raises(RuntimeError, match="stop at 5"):
        decode_page(body, EventPage, on_item_error=abort)


# --- decode_page: a malformed envelope ------------------------------------------------


@pytest.mark.parametrize(
    ("body", "path"),
    [
        (b'{"status":"OK","events":{"0":{}}}', "$.events"),
        (b'{"status":"OK","scrollId":7,"events":[{"id":"a"}, {"id": 1}]}', "$.scrollId"),
        (b'[{"id":"a"}]', None),
        (b'{"status":"OK","events":[{"id":"a"}, {"id":', None),
        (b"", None),
    ],
)
def test_a_malformed_envelope_raises(body: bytes, path: str | None) -> None:
    seen: list[ItemError] = []
    with pytest.raises(DecodeError) as info:
        decode_page(body, EventPage, on_item_error=seen.append)
    assert info.value.path == path
    assert "event page" in str(info.value)
    assert seen == []


def test_a_count_that_cannot_be_read_is_unknown_and_the_page_is_kept() -> None:
    # spec §2: counts are "number"; one that is no whole number costs itself, not the page
    for count in (b'"many"', b"2.5"):
        body = b'{"status":"OK","count":%s,"events":[{"id":"a"},{"id":"b"}]}' % count
        page = decode_page(body, EventPage)
        assert page.envelope.count is None
        assert [e.id for e in page.items] == ["a", "b"]
    # written as a float, or as text, a whole number is read as one
    for count in (b"2.0", b'"2"'):
        body = b'{"status":"OK","count":%s,"events":[{"id":"a"},{"id":"b"}]}' % count
        assert decode_page(body, EventPage).envelope.count == 2


# --- the never-lose-a-record property -------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
event_like = st.fixed_dictionaries(
    {},
    optional={
        "type": json_values,
        "id": json_values,
        "date": json_values,
        "visit": st.fixed_dictionaries(
            {}, optional={"duration": json_values, "startAt": json_values}
        ),
        "survey": st.fixed_dictionaries({}, optional={"answers": json_values}),
    },
)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(event_like | json_values, max_size=12), keep_raw=st.booleans())
def test_every_item_is_either_decoded_or_reported(items: list[Any], keep_raw: bool) -> None:
    chunks = [dumps(i) for i in items]
    seen: list[ItemError] = []
    page = decode_page(page_body(chunks), EventPage, keep_raw=keep_raw, on_item_error=seen.append)
    assert len(page.items) + len(page.errors) == len(items)
    assert seen == page.errors
    bad = {e.index for e in page.errors}
    for e in page.errors:
        assert e.raw == chunks[e.index]
        assert e.path.startswith(f"$.events[{e.index}]")
    good = [i for i in range(len(items)) if i not in bad]
    assert page.items == [decode(chunks[i], Event) for i in good]
    if keep_raw:
        assert page.raw_items is not None
        assert [bytes(r) for r in page.raw_items] == [chunks[i] for i in good]
