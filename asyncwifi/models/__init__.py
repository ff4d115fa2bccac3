"""Typed models of every documented resource, and their decoding and encoding.

Models are hand-written msgspec Structs grouped by resource (``contacts``, ``hotspots``,
``segments``, ``events``, ``auth``); ``decode``/``decode_page``/``encode`` use decoders built
once at import. See :mod:`asyncwifi.models._decode` for the page fallback rules.
"""

from asyncwifi._instant import parse_timestamp
from asyncwifi.models._base import KeyValue, Model
from asyncwifi.models._decode import (
    DecodedPage,
    ItemError,
    decode,
    decode_generic,
    decode_page,
    encode,
)
from asyncwifi.models.auth import ErrorBody, LoginRequest, LoginResponse
from asyncwifi.models.contacts import (
    Contact,
    ContactPage,
    CustomField,
    ExtId,
    Metrics,
    Policy,
    SegmentRef,
)
from asyncwifi.models.events import (
    EmailInfo,
    Event,
    EventPage,
    EventRef,
    EventWhen,
    EventWhere,
    Promo,
    Signup,
    SmsInfo,
    Survey,
    Visit,
)
from asyncwifi.models.generic import GenericResponse
from asyncwifi.models.hotspots import (
    Hotspot,
    HotspotCreate,
    HotspotDeleteResult,
    HotspotEnvelope,
    HotspotPage,
    HotspotUpdate,
    HotspotWriteResult,
)
from asyncwifi.models.segments import Segment, SegmentPage
from asyncwifi.models.webhook import (
    WEBHOOK_EVENT_TYPES,
    GeofenceGeometry,
    WebhookContact,
    WebhookEventInfo,
    WebhookExtIds,
    WebhookExtraFields,
    WebhookGeofence,
    WebhookHotspot,
    WebhookLocation,
    WebhookMetrics,
    WebhookOptin,
    WebhookOrganization,
    WebhookPayload,
)

__all__ = [  # noqa: RUF022 - plain sorted order, pinned by tests/unit/test_models.py
    "Contact",
    "ContactPage",
    "CustomField",
    "DecodedPage",
    "EmailInfo",
    "ErrorBody",
    "Event",
    "EventPage",
    "EventRef",
    "EventWhen",
    "EventWhere",
    "ExtId",
    "GenericResponse",
    "GeofenceGeometry",
    "Hotspot",
    "HotspotCreate",
    "HotspotDeleteResult",
    "HotspotEnvelope",
    "HotspotPage",
    "HotspotUpdate",
    "HotspotWriteResult",
    "ItemError",
    "KeyValue",
    "LoginRequest",
    "LoginResponse",
    "Metrics",
    "Model",
    "Policy",
    "Promo",
    "Segment",
    "SegmentPage",
    "SegmentRef",
    "Signup",
    "SmsInfo",
    "Survey",
    "Visit",
    "WEBHOOK_EVENT_TYPES",
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
    "decode",
    "decode_generic",
    "decode_page",
    "encode",
    "parse_timestamp",
]
