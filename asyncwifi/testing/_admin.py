"""The simulator's own endpoints under ``/_simulator/`` (not behind the gateway): what a
test or benchmark in another process reads and changes (see ``SimulatorProcess``); and the
API's OpenAPI definition at ``/openapi.json`` (spec §9.4), outside the gateway too.

``?organization=`` names one organization by id or index (default: the first).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from importlib import resources
from typing import Any

from aiohttp import web

from asyncwifi.testing._api import json_response
from asyncwifi.testing._faults import Faults
from asyncwifi.testing._gateway import ADMIN, OPENAPI_PATH, Gateway
from asyncwifi.testing._tenant import Tenant
from asyncwifi.testing._util import BadParameter, parse_int

__all__ = ["admin_routes", "openapi_definition"]

_Handler = Callable[[web.Request], Coroutine[Any, Any, web.StreamResponse]]


class _Admin:
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    def _tenant(self, request: web.Request) -> Tenant:
        name = request.query.get("organization")
        if name is None:
            return self.gateway.tenants.first
        try:
            return self.gateway.tenants.find(name)
        except KeyError as exc:
            raise web.HTTPNotFound(text=str(exc.args[0]), content_type="text/plain") from None

    async def counters(self, request: web.Request) -> web.Response:
        """GET counters: one organization's ``Counters`` as JSON."""
        return json_response(self._tenant(request).counters.summary())

    async def organizations(self, request: web.Request) -> web.Response:
        """GET organizations: each organization's id, key and secret, in order."""
        return json_response([t.credentials._asdict() for t in self.gateway.tenants])

    async def faults(self, request: web.Request) -> web.Response:
        """PUT faults: replace the faults with the JSON body's fields."""
        self.gateway.faults = Faults.from_dict(await request.json())
        return json_response({"status": "OK"})

    async def revoke_key(self, request: web.Request) -> web.Response:
        """POST revoke-key: revoke one organization's key (and its tokens)."""
        self._tenant(request).revoke_key()
        return json_response({"status": "OK"})

    async def events(self, request: web.Request) -> web.Response:
        """POST events?count=N: add N events now to one organization, or to each with
        ``organization=*``; the new ids by organization."""
        try:
            count = parse_int(request.query.get("count"), "count", 1, 0, 1_000_000)
        except BadParameter as exc:
            return json_response({"message": str(exc)}, 409)
        if request.query.get("organization") == "*":
            chosen = list(self.gateway.tenants)
        else:
            chosen = [self._tenant(request)]
        return json_response({t.organization: t.add_events(count) for t in chosen})


def openapi_definition() -> bytes:
    """The API's OpenAPI definition (spec §9.4), as shipped in the package: written from the
    reference and the vendor's published pages alone (``docs/reference/api.md``,
    ``observed.md``), both event record shapes, numbers as "number", "not shown" left open."""
    return resources.files("asyncwifi.testing").joinpath("openapi.json").read_bytes()


async def _openapi(request: web.Request) -> web.Response:
    """GET /openapi.json: the definition, with no token and outside the gateway's counts."""
    return web.Response(body=openapi_definition(), content_type="application/json")


def admin_routes(gateway: Gateway) -> list[tuple[str, str, _Handler]]:
    """(method, path, handler) of the simulator's own endpoints: the admin's, and the API's
    OpenAPI definition."""
    admin = _Admin(gateway)
    return [
        ("GET", OPENAPI_PATH, _openapi),
        ("GET", ADMIN + "counters", admin.counters),
        ("GET", ADMIN + "organizations", admin.organizations),
        ("PUT", ADMIN + "faults", admin.faults),
        ("POST", ADMIN + "revoke-key", admin.revoke_key),
        ("POST", ADMIN + "events", admin.events),
    ]
