"""Typed models of every documented resource, and their decoding and encoding.

Models are hand-written msgspec Structs grouped by resource (private modules ``_contacts``,
``_hotspots``, ``_segments``, ``_events``, ``_webhook``); ``decode``/``encode`` use decoders
built once at import. The sub-records (an event's ``visit``, a contact's ``policy`` ...)
are reached through the fields of the records listed here; wire envelopes are internal:
the streams hand out records. See :mod:`asyncwifi.models._pages` for the page fallback
rules.

The door also passes, outside ``__all__`` (the public surface is at its 100 names), what
the SDK's other packages build with: the one rule of record identity (``record_id``,
``record_ids``, ``content_id``, ``undecoded``, ``RawBytes``: the stream, the engine, the
dlt source), the wire envelopes and their codecs (``encode``, ``decode_generic``,
``generic_objects``, ``DecodedPage``, ``GenericResponse``, ``ContactPage``, ``EventPage``,
``EventKeyPage``, ``HotspotPage``, ``HotspotEnvelope``, ``HotspotDeleteResult``,
``SegmentPage``, ``LoginRequest``, ``LoginResponse``: the client and its resources) and
``WEBHOOK_EVENT_TYPES`` (the simulator's webhooks).
"""

from asyncwifi.models._auth import LoginRequest as LoginRequest
from asyncwifi.models._auth import LoginResponse as LoginResponse
from asyncwifi.models._contacts import Contact, Policy
from asyncwifi.models._contacts import ContactPage as ContactPage
from asyncwifi.models._decode import decode
from asyncwifi.models._decode import decode_generic as decode_generic
from asyncwifi.models._decode import encode as encode
from asyncwifi.models._decode import generic_objects as generic_objects
from asyncwifi.models._events import Event, EventKey
from asyncwifi.models._events import EventKeyPage as EventKeyPage
from asyncwifi.models._events import EventPage as EventPage
from asyncwifi.models._generic import GenericResponse as GenericResponse
from asyncwifi.models._hotspots import (
    Hotspot,
    HotspotCreate,
    HotspotUpdate,
    HotspotWriteResult,
)
from asyncwifi.models._hotspots import HotspotDeleteResult as HotspotDeleteResult
from asyncwifi.models._hotspots import HotspotEnvelope as HotspotEnvelope
from asyncwifi.models._hotspots import HotspotPage as HotspotPage
from asyncwifi.models._identity import RawBytes as RawBytes
from asyncwifi.models._identity import content_id as content_id
from asyncwifi.models._identity import record_id as record_id
from asyncwifi.models._identity import record_ids as record_ids
from asyncwifi.models._identity import undecoded as undecoded
from asyncwifi.models._pages import DecodedPage as DecodedPage
from asyncwifi.models._pages import ItemError, decode_page
from asyncwifi.models._segments import Segment
from asyncwifi.models._segments import SegmentPage as SegmentPage
from asyncwifi.models._webhook import WEBHOOK_EVENT_TYPES as WEBHOOK_EVENT_TYPES
from asyncwifi.models._webhook import WebhookPayload

__all__ = [
    "Contact",
    "Event",
    "EventKey",
    "Hotspot",
    "HotspotCreate",
    "HotspotUpdate",
    "HotspotWriteResult",
    "ItemError",
    "Policy",
    "Segment",
    "WebhookPayload",
    "decode",
    "decode_page",
]
