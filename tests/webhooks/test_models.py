"""The webhook payload models decode every §6.2 object and tolerate what they do not know."""

from __future__ import annotations

import msgspec
import pytest

from asyncwifi.models._base import KeyValue
from asyncwifi.models._webhook import (
    WEBHOOK_EVENT_TYPES,
    GeofenceGeometry,
    WebhookContact,
    WebhookEventInfo,
    WebhookPayload,
)

FULL = b"""{
  "hotspot": {"id": "hs-9"},
  "organization": {"id": "org-1"},
  "location": {"id": "loc-1", "country": "IT", "address": "Via Roma 1", "extId": "store-7",
               "tags": ["mall", "north"]},
  "event": {"type": "geo-dwell", "nonce": "abc-123", "dwellTime": 600, "timestamp": 1700000000},
  "contact": {
    "id": "c-1", "birthday": "1990-04-01", "country": "IT", "firstname": "Ada",
    "lastname": "Lovelace", "email": "ada@example.com", "phone": "+390501234567",
    "civilStatus": "Mrs.", "language": "it", "personalid": "AB123", "gender": "female",
    "created": "2024-03-01T10:00:00Z", "marketing": true, "provider": "google",
    "ageVerification": null, "online": true, "type": "guest", "username": "ada",
    "metrics": {"visitCount": 12},
    "extraFields": {"extIds": {"id": "x1", "prop1": "p1", "prop2": "p2"}},
    "customFields": [{"key": "favourite", "value": "tea"}],
    "optin": [
      {"date": "2024-03-01T10:00:00Z", "name": "termsOfUse", "accepted": true, "id": 0,
       "type": "LEGACY", "version": "default"},
      {"date": 1709287200, "name": "newsletter", "accepted": false, "id": 17,
       "type": "custom", "version": 3}
    ]
  },
  "geofence": {
    "metadata": [{"key": "floor", "value": "2"}], "name": "Entrance",
    "geometry": {"type": "Circle", "coordinates": [10.4, 43.7], "radius": 25.5},
    "id": "gf-1", "extId": "ext-gf", "tags": ["door"]
  }
}"""


def test_a_full_payload_decodes_into_every_object() -> None:
    p = msgspec.json.decode(FULL, type=WebhookPayload)
    assert p.hotspot is not None
    assert p.hotspot.id == "hs-9"
    assert p.organization is not None
    assert p.organization.id == "org-1"
    assert p.location is not None
    assert (p.location.ext_id, p.location.tags) == ("store-7", ["mall", "north"])
    assert p.event == WebhookEventInfo(
        type="geo-dwell", nonce="abc-123", dwell_time=600.0, timestamp=1_700_000_000.0
    )
    assert p.type == "geo-dwell"
    assert p.nonce == "abc-123"
    assert p.event.occurred_at is not None
    assert p.event.occurred_at.year == 2023
    c = p.contact
    assert c is not None
    assert (c.first_name, c.last_name, c.personal_id, c.civil_status) == (
        "Ada",
        "Lovelace",
        "AB123",
        "Mrs.",
    )
    assert c.age_verification is None
    assert c.online is True
    assert c.marketing is True
    assert c.metrics is not None
    assert c.metrics.visit_count == 12
    assert c.extra_fields is not None
    assert c.extra_fields.ext_ids is not None
    assert (c.extra_fields.ext_ids.id, c.extra_fields.ext_ids.prop2) == ("x1", "p2")
    assert c.custom_fields == [KeyValue(key="favourite", value="tea")]
    assert [o.name for o in c.optin] == ["termsOfUse", "newsletter"]
    assert c.optin[0].id == 0
    assert c.optin[0].type == "LEGACY"
    assert c.optin[0].accepted is True
    assert c.optin[1].date == 1709287200
    assert c.optin[1].version == 3
    g = p.geofence
    assert g is not None
    assert g.name == "Entrance"
    assert g.ext_id == "ext-gf"
    assert g.metadata == [KeyValue(key="floor", value="2")]
    assert g.geometry == GeofenceGeometry(type="Circle", coordinates=[10.4, 43.7], radius=25.5)


def test_encoding_uses_the_wire_names() -> None:
    contact = WebhookContact(first_name="Ada", personal_id="X", civil_status="Mr.")
    wire = msgspec.json.decode(msgspec.json.encode(contact))
    assert wire == {"firstname": "Ada", "personalid": "X", "civilStatus": "Mr."}
    p = msgspec.json.decode(FULL, type=WebhookPayload)
    again = msgspec.json.decode(msgspec.json.encode(p), type=WebhookPayload)
    assert again == p


def test_unknown_fields_and_event_types_are_tolerated() -> None:
    body = (
        b'{"event": {"type": "teleport", "nonce": "n", "newField": [1, 2]},'
        b' "contact": {"shoeSize": 44, "metrics": {"visitCount": 1, "extra": {}}},'
        b' "brandNewObject": {"x": 1}}'
    )
    p = msgspec.json.decode(body, type=WebhookPayload)
    assert p.type == "teleport"
    assert p.contact is not None
    assert p.contact.metrics is not None
    assert p.contact.metrics.visit_count == 1


@pytest.mark.parametrize(
    "body",
    [
        b"{}",
        b'{"hotspot": {"id": null}, "event": null, "contact": null, "geofence": null}',
        b'{"event": {"type": null, "nonce": null, "dwellTime": null, "timestamp": null}}',
    ],
)
def test_every_object_and_field_may_be_missing_or_null(body: bytes) -> None:
    p = msgspec.json.decode(body, type=WebhookPayload)
    assert p.nonce is None
    assert p.type is None


def test_event_types_cover_every_moment_of_the_spec() -> None:
    assert len(WEBHOOK_EVENT_TYPES) == len(set(WEBHOOK_EVENT_TYPES)) == 19
    for moment in (
        "signup",
        "login",
        "presence",
        "space",
        "dwell",
        "leave",
        "geo-arriving",
        "geo-dwell",
        "geo-leave",
        "verification.email",
        "verification.phone",
        "promopageaction",
        "answer_survey",
        "prx_send_email",
        "prx_send_sms",
        "prx_open_email",
        "prx_click_email",
        "prx_click_sms",
        "promo_cta",
    ):
        assert moment in WEBHOOK_EVENT_TYPES


def test_a_field_of_the_wrong_type_is_a_validation_error_with_its_path() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"\$\.event\.timestamp"):
        msgspec.json.decode(b'{"event": {"timestamp": "yesterday"}}', type=WebhookPayload)
