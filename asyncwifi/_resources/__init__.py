"""The Client's resource namespaces (``client.contacts`` ...): requests built, replies decoded."""

from asyncwifi._resources._contacts import Contacts
from asyncwifi._resources._events import Events
from asyncwifi._resources._hotspots import Hotspots
from asyncwifi._resources._segments import Segments

__all__ = ["Contacts", "Events", "Hotspots", "Segments"]
