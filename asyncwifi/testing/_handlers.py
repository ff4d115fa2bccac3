"""The API behind the gateway: every endpoint of spec §4, in matching order.

The handlers live by resource (``_api_contacts``, ``_api_hotspots``, ``_api_events``) on a
shared base (``_api``); :class:`SimulatedApi` puts them together and lists the routes.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from aiohttp import web

from asyncwifi.testing._api import LOGIN_PATH
from asyncwifi.testing._api_contacts import ContactsApi
from asyncwifi.testing._api_events import EventsApi
from asyncwifi.testing._api_hotspots import HotspotsApi

__all__ = ["SimulatedApi"]

#: a handler, unbound: called with the API of the request's organization
Handler = Callable[["SimulatedApi", web.Request], Coroutine[Any, Any, web.StreamResponse]]


class SimulatedApi(ContactsApi, HotspotsApi, EventsApi):
    """The endpoints of spec §4, bound to one organization's state."""

    @classmethod
    def routes(cls) -> list[tuple[str, str, Handler]]:
        """(method, path, unbound handler) for every endpoint, in matching order (the
        gateway calls the handler on the API of the organization a request belongs to)."""
        return [
            ("POST", LOGIN_PATH, cls.login),
            ("POST", "/v1/sts/logout", cls.logout),
            ("GET", "/v2/customers/organizations/{cid}", cls.contacts_list),
            ("GET", "/v2/customers/{cid}", cls.contact_get),
            ("GET", "/v2/customers/{cid}/events", cls.contact_events),
            ("GET", "/v2/customers/{cid}/devices", cls.contact_devices),
            ("GET", "/v2/customers/{cid}/accountings", cls.contact_accountings),
            ("PUT", "/v1/customers/{cid}/policies", cls.contact_policies),
            ("DELETE", "/v1/customers/{cid}", cls.contact_delete),
            ("GET", "/v3/hotspots/organizations/{cid}", cls.hotspots_list),
            ("GET", "/v3/hotspots/identifier/{hotspotIdentifier}", cls.hotspot_by_identifier),
            ("GET", "/v3/hotspots/{hotspotId}", cls.hotspot_get),
            ("POST", "/v3/hotspots", cls.hotspot_create),
            ("PUT", "/v3/hotspots/{hotspotId}", cls.hotspot_update),
            ("DELETE", "/v3/hotspots/{hotspotId}", cls.hotspot_delete),
            ("GET", "/v2/segments/organizations/{cid}", cls.segments_list),
            ("GET", "/v1/organizations/{cid}/events", cls.events_list),
            ("GET", "/v1/organizations/{cid}/customers/{id}/events", cls.customer_events),
        ]
