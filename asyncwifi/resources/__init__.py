"""Resource namespaces of the Client: they build requests and decode responses."""

from asyncwifi.resources.contacts import Contacts
from asyncwifi.resources.events import Events
from asyncwifi.resources.hotspots import Hotspots
from asyncwifi.resources.segments import Segments

__all__ = ["Contacts", "Events", "Hotspots", "Segments"]
