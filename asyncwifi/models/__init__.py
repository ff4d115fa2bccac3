"""Typed models of every documented resource, and their decoding and encoding.

Models are hand-written msgspec Structs grouped by resource (private modules ``_contacts``,
``_hotspots``, ``_segments``, ``_events``, ``_webhook``); ``decode``/``encode`` use decoders
built once at import. The sub-records (an event's ``visit``, a contact's ``policy`` ...)
are reached through the fields of the records listed here; wire envelopes are internal:
the streams hand out records. See :mod:`asyncwifi.models._decode` for the page fallback
rules.
"""

from asyncwifi.models._contacts import Contact, Policy
from asyncwifi.models._decode import ItemError, decode, decode_page
from asyncwifi.models._events import Event, EventKey
from asyncwifi.models._hotspots import (
    Hotspot,
    HotspotCreate,
    HotspotUpdate,
    HotspotWriteResult,
)
from asyncwifi.models._segments import Segment
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
