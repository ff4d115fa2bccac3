"""Webhook payloads: the body the platform POSTs to a receiver (spec §6.2).

The body is "a chosen list of attributes" configured per webhook in the dashboard (spec
§6.2), so every object and every field is optional: a missing or null value never fails
decoding, and unknown fields are ignored. ``event.type`` is a plain string so that a moment
the platform adds later still decodes (the router sends it to the fallback handler).

Some wire names are not the camelCase of the Python name (``firstname``, ``personalid``);
those carry an explicit ``name=``. Where the spec gives no type (custom field values, optin
ids, versions and dates), the union of the plausible JSON types is accepted.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from asyncwifi._instant import parse_timestamp
from asyncwifi.models._base import KeyValue, Model

__all__ = [
    "WEBHOOK_EVENT_TYPES",
    "GeofenceGeometry",
    "WebhookContact",
    "WebhookEventInfo",
    "WebhookExtIds",
    "WebhookExtraFields",
    "WebhookGeofence",
    "WebhookHotspot",
    "WebhookLocation",
    "WebhookMetrics",
    "WebhookOptin",
    "WebhookOrganization",
    "WebhookPayload",
]

#: Every ``event.type`` value listed in spec §6.2, in the order of its table.
WEBHOOK_EVENT_TYPES: tuple[str, ...] = (
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
)


class WebhookHotspot(Model):
    """``hotspot``: null id unless the event is tracked at access-point level (spec §6.2)."""

    id: str | None = None


class WebhookOrganization(Model):
    """``organization``: the tenant."""

    id: str | None = None


class WebhookLocation(Model):
    """``location``: where the event happened."""

    id: str | None = None
    country: str | None = None
    address: str | None = None
    #: external reference set by the operator
    ext_id: str | None = None
    tags: list[str] = msgspec.field(default_factory=list)


class WebhookEventInfo(Model):
    """``event``: what happened, its unique ``nonce`` and when (epoch seconds)."""

    #: one of :data:`WEBHOOK_EVENT_TYPES`, or a type this version does not know
    type: str | None = None
    #: unique event identifier: the de-duplication key
    nonce: str | None = None
    #: seconds, or null when the event has no duration
    dwell_time: float | None = None
    #: epoch seconds (UTC)
    timestamp: float | None = None

    @property
    def occurred_at(self) -> datetime | None:
        """``timestamp`` as an aware UTC ``datetime`` (``None`` when absent)."""
        return parse_timestamp(self.timestamp)


class WebhookMetrics(Model):
    """``contact.metrics``."""

    #: total Wi-Fi logins before the current event
    visit_count: int | float | None = None


class WebhookExtIds(Model):
    """``contact.extraFields.extIds``: external identifiers."""

    id: str | None = None
    prop1: str | None = None
    prop2: str | None = None


class WebhookExtraFields(Model):
    """``contact.extraFields``."""

    ext_ids: WebhookExtIds | None = None


class WebhookOptin(Model):
    """One consent in ``contact.optin`` (spec §6.2)."""

    #: timestamp (the spec does not say string or number)
    date: str | float | None = None
    #: termsOfUse, privacy, mktgCommunications, or a custom name
    name: str | None = None
    #: always true for termsOfUse and privacy
    accepted: bool | None = None
    #: 0 for the default consents
    id: int | str | None = None
    #: LEGACY for the defaults, custom otherwise
    type: str | None = None
    #: "default" or a dashboard-defined value
    version: str | int | float | None = None


class WebhookContact(Model):
    """``contact``: the guest the event is about (spec §6.2, "Contact object")."""

    id: str | None = None
    #: YYYY-MM-DD
    birthday: str | None = None
    #: ISO 3166, of the location where the contact signed up
    country: str | None = None
    first_name: str | None = msgspec.field(default=None, name="firstname")
    last_name: str | None = msgspec.field(default=None, name="lastname")
    email: str | None = None
    #: international format
    phone: str | None = None
    #: salutation (Mr., Mrs., Miss)
    civil_status: str | None = msgspec.field(default=None, name="civilStatus")
    #: ISO 639, from the splash page language
    language: str | None = None
    #: document number collected on the splash page
    personal_id: str | None = msgspec.field(default=None, name="personalid")
    #: male, female, other
    gender: str | None = None
    #: timestamp (string per the spec; a number is tolerated)
    created: str | float | None = None
    #: legacy default marketing consent
    marketing: bool | None = None
    #: sign-up method (passthrough, kiosk, sso, facebook, google, ...)
    provider: str | None = None
    age_verification: bool | None = None
    #: Wi-Fi connection status
    online: bool | None = None
    #: legacy, discontinued (e.g. guest)
    type: str | None = None
    #: Wi-Fi account name
    username: str | None = None
    metrics: WebhookMetrics | None = None
    extra_fields: WebhookExtraFields | None = msgspec.field(default=None, name="extraFields")
    custom_fields: list[KeyValue] = msgspec.field(default_factory=list)
    optin: list[WebhookOptin] = msgspec.field(default_factory=list)


class GeofenceGeometry(Model):
    """``geofence.geometry``: e.g. a Circle at ``[longitude, latitude]`` with a radius."""

    type: str | None = None
    #: longitude, latitude
    coordinates: list[float] = msgspec.field(default_factory=list)
    radius: float | None = None


class WebhookGeofence(Model):
    """``geofence``: for the geo-arriving, geo-dwell and geo-leave moments."""

    metadata: list[KeyValue] = msgspec.field(default_factory=list)
    name: str | None = None
    geometry: GeofenceGeometry | None = None
    id: str | None = None
    ext_id: str | None = None
    tags: list[str] = msgspec.field(default_factory=list)


class WebhookPayload(Model):
    """The whole body of one webhook call (spec §6.2, "Payload shape")."""

    hotspot: WebhookHotspot | None = None
    organization: WebhookOrganization | None = None
    location: WebhookLocation | None = None
    event: WebhookEventInfo | None = None
    contact: WebhookContact | None = None
    geofence: WebhookGeofence | None = None

    @property
    def type(self) -> str | None:
        """``event.type``, or ``None`` when the body carries no event."""
        return self.event.type if self.event is not None else None

    @property
    def nonce(self) -> str | None:
        """``event.nonce``, or ``None`` when absent."""
        return self.event.nonce if self.event is not None else None
