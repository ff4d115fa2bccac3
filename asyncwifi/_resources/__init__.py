"""The Client's resource namespaces (``client.contacts`` ...): requests built, replies decoded.

For the SDK's other packages, this door also passes what they check as the resources do:
the contacts' page size (``PageSize``, ``page_size``) and an events query
(``validate_event_query``)."""

from asyncwifi._resources._contacts import Contacts
from asyncwifi._resources._contacts import PageSize as PageSize
from asyncwifi._resources._contacts import page_size as page_size
from asyncwifi._resources._events import Events
from asyncwifi._resources._events import validate_event_query as validate_event_query
from asyncwifi._resources._hotspots import Hotspots
from asyncwifi._resources._segments import Segments

__all__ = ["Contacts", "Events", "Hotspots", "Segments"]
