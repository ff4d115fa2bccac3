"""The API behind the gateway: every endpoint of spec §4, in matching order.

The handlers live by resource (``_api_contacts``, ``_api_hotspots``, ``_api_events``) on a
shared base (``_api``); :class:`SimulatedApi` puts them together and lists the routes.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from aiohttp import web

from asyncwifi.testing._api_contacts import ContactsApi
from asyncwifi.testing._api_events import EventsApi
from asyncwifi.testing._api_hotspots import HotspotsApi

__all__ = ["SimulatedApi"]

Handler = Callable[[web.Request], Coroutine[Any, Any, web.StreamResponse]]


class SimulatedApi(ContactsApi, HotspotsApi, EventsApi):
    """The endpoints of spec §4, bound to one simulator's state."""

    def routes(self) -> list[tuple[str, str, Handler]]:
        """(method, path, handler) for every endpoint, in matching order."""
        return [
            ("POST", "/v1/sts/login/services", self.login),
            ("POST", "/v1/sts/logout", self.logout),
            ("GET", "/v2/customers/organizations/{cid}", self.contacts_list),
            ("GET", "/v2/customers/{cid}", self.contact_get),
            ("GET", "/v2/customers/{cid}/events", self.contact_events),
            ("GET", "/v2/customers/{cid}/devices", self.contact_devices),
            ("GET", "/v2/customers/{cid}/accountings", self.contact_accountings),
            ("PUT", "/v1/customers/{cid}/policies", self.contact_policies),
            ("DELETE", "/v1/customers/{cid}", self.contact_delete),
            ("GET", "/v3/hotspots/organizations/{cid}", self.hotspots_list),
            ("GET", "/v3/hotspots/identifier/{hotspotIdentifier}", self.hotspot_by_identifier),
            ("GET", "/v3/hotspots/{hotspotId}", self.hotspot_get),
            ("POST", "/v3/hotspots", self.hotspot_create),
            ("PUT", "/v3/hotspots/{hotspotId}", self.hotspot_update),
            ("DELETE", "/v3/hotspots/{hotspotId}", self.hotspot_delete),
            ("GET", "/v2/segments/organizations/{cid}", self.segments_list),
            ("GET", "/v1/organizations/{cid}/events", self.events_list),
            ("GET", "/v1/organizations/{cid}/customers/{id}/events", self.customer_events),
        ]
