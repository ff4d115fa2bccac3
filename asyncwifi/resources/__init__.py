"""Resource namespaces of the Client: they build requests and decode responses."""

from asyncwifi.resources._contacts import Contacts
from asyncwifi.resources._events import Events
from asyncwifi.resources._hotspots import Hotspots
from asyncwifi.resources._segments import Segments

__all__ = ["Contacts", "Events", "Hotspots", "Segments"]
