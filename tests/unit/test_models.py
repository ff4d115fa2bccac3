"""The models decode every documented field, tolerate what the spec leaves open, and
encode request bodies exactly as the API expects them."""

from __future__ import annotations

import typing
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import msgspec
import pytest
from rich.pretty import pretty_repr

import asyncwifi.models as models
from asyncwifi._instant import parse_timestamp
from asyncwifi.errors import DecodeError, ValidationError
from asyncwifi.models import (
    Contact,
    Event,
    Hotspot,
    HotspotCreate,
    HotspotUpdate,
    HotspotWriteResult,
    _auth,
    _contacts,
    _events,
    _generic,
    _hotspots,
    _segments,
    _webhook,
    decode,
    decode_generic,
    decode_page,
    encode,
)
from asyncwifi.models._auth import ErrorBody, LoginRequest, LoginResponse
from asyncwifi.models._base import Model
from asyncwifi.models._contacts import ContactPage
from asyncwifi.models._events import EventPage
from asyncwifi.models._hotspots import HotspotDeleteResult, HotspotEnvelope, HotspotPage
from asyncwifi.models._segments import SegmentPage
from tests.fixtures.models import (
    DOCUMENTED_EVENT_TYPES,
    UNKNOWN_EVENT_TYPES,
    contact,
    contact_page,
    dumps,
    event,
    hotspot,
    hotspot_page,
    segment_page,
)

#: every model of the package, the public ones and the sub-records they reach
MODEL_CLASSES = sorted(
    {
        obj
        for module in (_auth, _contacts, _events, _generic, _hotspots, _segments, _webhook)
        for name in module.__all__
        if isinstance(obj := getattr(module, name), type) and issubclass(obj, msgspec.Struct)
    },
    key=lambda cls: cls.__name__,
)


def documented(value: Any) -> Any:
    """The fixture as the SDK should see it: unknown ``x*`` fields and nulls removed."""
    if isinstance(value, dict):
        return {
            k: documented(v) for k, v in value.items() if not k.startswith("x") and v is not None
        }
    if isinstance(value, list):
        return [documented(v) for v in value]
    return value


# --- the namespace --------------------------------------------------------------------


def test_all_is_sorted_and_importable() -> None:
    assert models.__all__ == sorted(models.__all__)
    for name in models.__all__:
        assert hasattr(models, name), name


@pytest.mark.parametrize("cls", MODEL_CLASSES, ids=lambda c: c.__name__)
def test_every_model_has_a_default_on_every_field(cls: type[Model]) -> None:
    assert issubclass(cls, Model)
    cls()  # no required field anywhere
    decode(b"{}", cls)  # and an empty object decodes


@pytest.mark.parametrize("cls", MODEL_CLASSES, ids=lambda c: c.__name__)
def test_type_fields_are_plain_strings(cls: type[Model]) -> None:
    hints = typing.get_type_hints(cls)
    if "type" in hints:
        assert set(typing.get_args(hints["type"])) <= {str, type(None), msgspec.UnsetType}


# --- contacts -------------------------------------------------------------------------


def test_contact_decodes_every_documented_field_and_loses_none() -> None:
    wire = contact(1)
    decoded = decode(dumps(wire), Contact)
    assert msgspec.to_builtins(decoded) == documented(wire)
    # every field of the model was filled by the fixture
    assert all(v is not None for v in msgspec.structs.asdict(decoded).values())
    assert decoded.metrics is not None
    assert all(v is not None for v in msgspec.structs.asdict(decoded.metrics).values())


def test_contact_wire_names_follow_the_spec() -> None:
    decoded = decode(dumps(contact(2)), Contact)
    assert decoded.ext_id is not None
    assert decoded.ext_id.prop2 == "gold"
    assert decoded.segment_cids is not None
    assert "," in decoded.segment_cids
    assert decoded.metrics is not None
    assert decoded.metrics.pref_visit_w_day is not None  # wire: prefVisitWDay
    assert decoded.metrics.last_visit_date_utc is not None  # wire: lastVisitDateUtc
    assert [p.name for p in decoded.policies or []] == [
        "termsOfUse",
        "privacy",
        "mktgCommunications",
        "profiling",
    ]
    assert decoded.generic_custom_field is not None
    assert decoded.generic_custom_field[1].key == "newsletter"


def test_age_is_a_number_or_a_string() -> None:
    as_number = decode(dumps(contact(5)), Contact)
    as_string = decode(dumps(contact(5, age_as_string=True)), Contact)
    assert isinstance(as_number.age, int)
    assert as_string.age == str(as_number.age)


def test_nullable_fields_accept_null() -> None:
    decoded = decode(dumps(contact(3, nulls=True)), Contact)
    assert decoded.title is None
    assert decoded.zip_code is None
    assert decoded.email_valid is None
    assert decoded.external_identity_id is None
    assert decoded.personal_id is None
    assert decoded.email is not None


def test_null_or_missing_anywhere_never_fails() -> None:
    wire = dict.fromkeys(contact(0))
    assert decode(dumps(wire), Contact) == Contact()
    assert decode(b'{"extId": {}, "metrics": {}}', Contact).ext_id == _contacts.ExtId()


def test_unknown_fields_are_ignored_at_every_level() -> None:
    wire = contact(4)
    assert decode(dumps(wire), Contact) == decode(dumps(documented(wire)), Contact)
    page = contact_page(3)
    assert "xTook" in page
    assert decode(dumps(page), ContactPage).count == 3


def test_contact_page_envelope() -> None:
    page = decode(dumps(contact_page(10, s_id="abc")), ContactPage)
    assert (page.count, page.total_count, page.s_id) == (10, 70, "abc")
    assert page.generated == "2024-06-01T10:00:00.000Z"
    assert len(page.customers or []) == 10
    assert decode(dumps(contact_page(0, s_id=None)), ContactPage).s_id is None


# --- events ---------------------------------------------------------------------------


SUB_OBJECT = {
    "visit": "visit",
    "signup": "signup",
    "login": "signup",
    "promo": "promo",
    "survey": "survey",
    "send_email": "email",
    "open_email": "email",
    "click_email": "email",
    "send_sms": "sms",
    "click_sms": "sms",
}


@pytest.mark.parametrize("type_", DOCUMENTED_EVENT_TYPES)
def test_each_documented_event_type_fills_its_sub_object(type_: str) -> None:
    wire = event(7, type_)
    decoded = decode(dumps(wire), Event)
    assert decoded.type == type_
    assert msgspec.to_builtins(decoded) == documented(wire)
    filled = {
        name
        for name in ("visit", "signup", "email", "sms", "survey", "promo")
        if getattr(decoded, name) is not None
    }
    assert filled == {SUB_OBJECT[type_]}


@pytest.mark.parametrize("type_", UNKNOWN_EVENT_TYPES)
def test_an_unknown_event_type_still_decodes(type_: str) -> None:
    decoded = decode(dumps(event(8, type_)), Event)
    assert decoded.type == type_
    assert decoded.id == "ev-0-00000008"


def test_event_date_is_optional() -> None:
    with_date = decode(dumps(event(0)), Event)
    without = decode(dumps(event(4)), Event)  # every fifth record has no date
    assert with_date.date is not None
    assert parse_timestamp(with_date.date) is not None
    assert with_date.time == parse_timestamp(with_date.date)
    assert without.date is None
    assert without.time is None


# The vendor's data example (docs/reference/observed.md): the nested shape
NESTED = {
    "organizationId": "org-1",
    "customerId": "c-42",
    "event": {"type": "arriving", "id": "65a1b2c3d4e5f60718293a4b"},
    "where": {"locationId": "loc-9", "locationName": "Lobby", "hotspotId": "h-3"},
    "when": {
        "createdAt": "2024-03-10T17:30:05.250Z",
        "createdAtLocal": "2024-03-10T10:30:05.250Z",
        "timezone": "America/Los_Angeles",
    },
}


def test_a_nested_record_reads_like_a_flat_one() -> None:
    ev = decode(dumps(NESTED), Event)
    assert (ev.id, ev.type) == ("65a1b2c3d4e5f60718293a4b", "arriving")
    assert ev.event == _events.EventRef(type="arriving", id="65a1b2c3d4e5f60718293a4b")
    assert ev.where == _events.EventWhere(
        location_id="loc-9", location_name="Lobby", hotspot_id="h-3"
    )
    assert (ev.organization_id, ev.customer_id) == ("org-1", "c-42")
    assert ev.time == datetime(2024, 3, 10, 17, 30, 5, 250_000, tzinfo=UTC)


def test_created_at_local_is_never_taken_for_utc() -> None:
    # the local time carries a Z and sorts seven hours before the UTC one: were it read as
    # UTC, a time cursor would move backwards and the stream would repeat records
    only_local = {**NESTED, "when": {"createdAtLocal": "2024-03-10T10:30:05Z"}}
    ev = decode(dumps(only_local), Event)
    assert ev.time is None
    assert ev.when is not None
    assert ev.when.created_at_local == "2024-03-10T10:30:05Z"


def test_the_spec_flat_record_has_no_time() -> None:
    flat = {"type": "visit", "id": "e1", "visit": {"startAt": "2024-01-01T10:00:00Z"}}
    ev = decode(dumps(flat), Event)
    assert (ev.id, ev.type, ev.time, ev.time_text) == ("e1", "visit", None, None)


def test_a_top_level_id_wins_over_the_nested_one() -> None:
    both = {"type": "visit", "id": "top", "event": {"type": "login", "id": "inner"}}
    ev = decode(dumps(both), Event)
    assert (ev.id, ev.type) == ("top", "visit")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-03-10T17:30:05Z", datetime(2024, 3, 10, 17, 30, 5, tzinfo=UTC)),
        ("2024-03-10T18:30:05+01:00", datetime(2024, 3, 10, 17, 30, 5, tzinfo=UTC)),
        ("2024-03-10T17:30:05", datetime(2024, 3, 10, 17, 30, 5, tzinfo=UTC)),
        ("yesterday", None),
        ("", None),
    ],
)
def test_an_unparseable_time_costs_the_cursor_not_the_record(
    text: str, expected: datetime | None
) -> None:
    ev = decode(dumps({**NESTED, "when": {"createdAt": text}}), Event)
    assert ev.id == "65a1b2c3d4e5f60718293a4b"
    assert ev.time == expected


def test_the_nested_envelope_has_no_status() -> None:
    body = dumps({"generated": "g", "count": 1, "events": [NESTED], "scrollId": "s"})
    page = decode(body, EventPage)
    assert page.status is None
    assert page.events is not None
    assert page.events[0].id == NESTED["event"]["id"]


def test_a_nested_record_keeps_its_exact_bytes() -> None:
    raw = dumps({"generated": "g", "events": [NESTED, NESTED]})
    decoded = decode_page(raw, EventPage, keep_raw=True)
    assert decoded.raw_items is not None
    assert [bytes(r) for r in decoded.raw_items] == [dumps(NESTED)] * 2


def test_visit_duration_accepts_integral_and_fractional_seconds() -> None:
    assert decode(b'{"visit": {"duration": 60}}', Event).visit == _events.Visit(duration=60.0)
    assert decode(b'{"visit": {"duration": 1.5}}', Event).visit == _events.Visit(duration=1.5)


def test_survey_questions_and_answers_are_string_maps() -> None:
    decoded = decode(dumps(event(3, "survey")), Event)
    assert decoded.survey is not None
    assert decoded.survey.answers == {"q1": "great", "q2": "yes"}


def test_event_page_envelope_with_and_without_scroll_id() -> None:
    body = b'{"status":"OK","generated":"g","count":0,"events":[],"scrollId":"s-1"}'
    page = decode(body, EventPage)
    assert (page.status, page.count, page.events, page.scroll_id) == ("OK", 0, [], "s-1")
    assert decode(b'{"status":"OK","events":[]}', EventPage).scroll_id is None


# --- hotspots, segments, auth ---------------------------------------------------------


def test_hotspot_page_and_single_envelope() -> None:
    wire = hotspot_page(3)
    page = decode(dumps(wire), HotspotPage)
    assert (page.status, page.count) == ("OK", 3)
    assert msgspec.to_builtins(page.hotspots) == documented(wire["hotspots"])
    single = decode(
        dumps({"status": "OK", "generated": "g", "hotspot": hotspot(1)}), HotspotEnvelope
    )
    assert isinstance(single.hotspot, Hotspot)
    assert single.hotspot.mac_address == hotspot(1)["macAddress"]


def test_hotspot_write_and_delete_results() -> None:
    body = b'{"generated":"g","status":"OK","locationId":"loc-1","hotspotId":"h-1","x":1}'
    assert decode(body, HotspotWriteResult) == HotspotWriteResult(
        generated="g", status="OK", location_id="loc-1", hotspot_id="h-1"
    )
    assert decode(b'{"generated":"g","status":"OK"}', HotspotDeleteResult).status == "OK"


def test_segment_page() -> None:
    wire = segment_page(4)
    page = decode(dumps(wire), SegmentPage)
    assert page.size == 4
    assert msgspec.to_builtins(page.segments) == documented(wire["segments"])


def test_login_and_error_bodies() -> None:
    assert decode(b'{"token":"eyJ.x.y"}', LoginResponse).token == "eyJ.x.y"
    assert decode(b'{"message":"Access Denied"}', ErrorBody).message == "Access Denied"
    body = encode(LoginRequest(client_key="key-1", client_secret="s3cr3t"))
    assert msgspec.json.decode(body) == {"clientKey": "key-1", "clientSecret": "s3cr3t"}


def test_login_request_never_shows_the_secret() -> None:
    request = LoginRequest(client_key="key-1", client_secret="s3cr3t-value")
    shown = [repr(request), str(request), f"{request}", repr([request]), pretty_repr(request)]
    for text in shown:
        assert "s3cr3t-value" not in text
        assert "key-1" in text


def test_a_login_body_that_fails_to_decode_keeps_no_excerpt() -> None:
    with pytest.raises(DecodeError) as info:
        decode(b'{"token": "eyJhbGciOi.secret-part.sig"', LoginResponse)
    assert info.value.raw is None
    assert "secret-part" not in str(info.value)


def test_login_response_never_shows_the_token() -> None:
    response = LoginResponse(token="eyJhbGciOi.secret-part.sig")
    for text in (repr(response), str(response), pretty_repr(response), repr({"r": response})):
        assert "secret-part" not in text
    assert "None" in repr(LoginResponse())


# --- request bodies -------------------------------------------------------------------


FULL_CREATE = HotspotCreate(
    organization_id="org-1",
    venue_id="loc-1",
    name="Lobby",
    description="ground floor",
    router_type="meraki",
    mac_address="AA:BB:CC:DD:EE:FF",
    hotspot_identifier="lobby-1",
    ssid="Guest",
    address_as_location=False,
    country="IT",
    address="Via Roma 1",
    city="Milano",
    state="MI",
    zip="20100",
    latitude=45.46,
    longitude=9.19,
)


def test_hotspot_create_uses_the_spec_wire_names_and_round_trips() -> None:
    body = encode(FULL_CREATE)
    assert set(msgspec.json.decode(body)) == {
        "organizationId",
        "venueId",
        "name",
        "description",
        "routerType",
        "macAddress",
        "hotspotIdentifier",
        "ssid",
        "addressAsLocation",
        "country",
        "address",
        "city",
        "state",
        "zip",
        "latitude",
        "longitude",
    }
    assert decode(body, HotspotCreate) == FULL_CREATE


def test_unset_fields_are_not_sent_but_false_and_empty_are() -> None:
    body = encode(HotspotCreate(name="Lobby", address_as_location=True))
    assert body == b'{"name":"Lobby","addressAsLocation":true}'
    update = HotspotUpdate(enabled=False, description="")
    assert msgspec.json.decode(encode(update)) == {"enabled": False, "description": ""}
    assert encode(HotspotUpdate()) == b"{}"


def test_hotspot_update_cannot_carry_fields_the_spec_forbids() -> None:
    for name in ("venue_id", "router_type", "mac_address", "hotspot_identifier", "ssid"):
        forbidden: dict[str, Any] = {name: "x"}
        with pytest.raises(TypeError, match="Unexpected keyword"):
            HotspotUpdate(**forbidden)
    update = HotspotUpdate(name="n", latitude=1.0, longitude=2.0, enabled=True)
    assert decode(encode(update), HotspotUpdate) == update


def test_encode_rejects_a_wrongly_typed_field_before_any_request() -> None:
    with pytest.raises(ValidationError, match=r"\$\.latitude"):
        encode(HotspotUpdate(latitude="north"))  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        encode(object())


# --- timestamps -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-03-01T10:00:00Z", datetime(2024, 3, 1, 10, tzinfo=UTC)),
        ("2024-03-01T10:00:00.123Z", datetime(2024, 3, 1, 10, 0, 0, 123000, tzinfo=UTC)),
        (
            "2024-03-01T11:00:00+01:00",
            datetime(2024, 3, 1, 11, tzinfo=timezone(timedelta(hours=1))),
        ),
        ("2024-03-01T11:00:00", datetime(2024, 3, 1, 11, tzinfo=UTC)),
        ("2024-03-01", datetime(2024, 3, 1, tzinfo=UTC)),
        (1709287200, datetime(2024, 3, 1, 10, tzinfo=UTC)),
        (1709287200.5, datetime(2024, 3, 1, 10, 0, 0, 500000, tzinfo=UTC)),
        (None, None),
        ("", None),
    ],
)
def test_parse_timestamp_shapes(text: str | float | None, expected: datetime | None) -> None:
    assert parse_timestamp(text) == expected


def test_parse_timestamp_offset_is_the_same_instant_as_utc() -> None:
    assert parse_timestamp("2024-03-01T11:00:00+01:00") == parse_timestamp("2024-03-01T10:00:00Z")


def test_parse_timestamp_keeps_local_times_naive_on_request() -> None:
    local = parse_timestamp("2024-03-01T11:00:00", assume_utc=False)
    assert local == datetime(2024, 3, 1, 11)
    assert local is not None
    assert local.tzinfo is None


@pytest.mark.parametrize("garbage", ["yesterday", "2024-13-45T99:00:00Z", "12:00", "Z"])
def test_parse_timestamp_rejects_garbage(garbage: str) -> None:
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_timestamp(garbage)


# --- generic ("not shown") responses --------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"", {}),
        (b"  \n", {}),
        (b'{"policies": [1, 2], "ok": true}', {"policies": [1, 2], "ok": True}),
        (b"[1, 2]", {"data": [1, 2]}),
        (b'"done"', {"data": "done"}),
    ],
)
def test_decode_generic(body: bytes, expected: dict[str, Any]) -> None:
    assert decode_generic(body) == expected


def test_decode_generic_rejects_bad_json() -> None:
    with pytest.raises(DecodeError, match="logout"):
        decode_generic(b"{nope", what="logout")
