"""The API behind the gateway: what every handler shares (spec §4, §7).

Handlers only read the request, change the simulated state and build the response; the
gateway middleware (``_server``) does rate limits, authentication and faults. A handler
reports how many objects it touched (for per-object limits) in ``request[OBJECTS]``.
Choices where the spec says "not shown" are documented on each handler.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
from aiohttp import web

from asyncwifi.testing._util import BadParameter

if TYPE_CHECKING:
    from asyncwifi.testing._view import SimulatorView

__all__ = [
    "DEFAULT_PAGE",
    "JSON",
    "LOGIN_PATH",
    "OBJECTS",
    "PAGE_MAX",
    "TOKEN",
    "ApiBase",
    "ApiFault",
    "drop_connection",
    "json_body",
    "json_response",
    "touch",
]

#: request key under which a handler records the objects it touched: ``{"hotspots": 3}``
OBJECTS = web.RequestKey("asyncwifi.objects", dict[str, int])
#: request key of the validated token's jti (set by the gateway)
TOKEN = web.RequestKey("asyncwifi.token", str)

#: the login endpoint (spec §4.1): the one path without a bearer token
LOGIN_PATH = "/v1/sts/login/services"
PAGE_MAX = 10_000  # spec §4.5 / §8: events size 1 to 10000 (contacts: the same bound)
DEFAULT_PAGE = 100  # spec §4.2: "100 seen"; the default of every list here
_ENCODE = msgspec.json.Encoder().encode
JSON = "application/json"


class ApiFault(Exception):
    """An error answer: ``status`` with the JSON body ``{"message": message}`` (spec §7)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def json_response(obj: Any, status: int = 200) -> web.Response:
    """A JSON response encoded with msgspec."""
    return web.Response(body=_ENCODE(obj), status=status, content_type=JSON, charset="utf-8")


def touch(request: web.Request, name: str, count: int) -> None:
    """Record that the response carries ``count`` objects of kind ``name``."""
    objects = request.get(OBJECTS)
    if objects is None:
        objects = request[OBJECTS] = {}
    objects[name] = objects.get(name, 0) + count


async def json_body(request: web.Request) -> Any:
    """The request's JSON body, or 409."""
    raw = await request.read()
    if not raw:
        raise BadParameter("a JSON body is required")
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        raise BadParameter("the body is not valid JSON") from None


class ApiBase:
    """State and helpers shared by the resource handlers."""

    def __init__(self, sim: SimulatorView) -> None:
        self.sim = sim
        self.data = sim.data

    def _now(self) -> float:
        return self.sim.clock.now()

    def _org(self, request: web.Request) -> None:
        """An organization path for another tenant: 403 (spec §7: not authorised)."""
        if request.match_info["cid"] != self.sim.organization:
            raise ApiFault(403, "Access Denied")

    def _contact(self, cid: str) -> dict[str, Any]:
        contact = self.data.contact(cid)
        if contact is None:
            raise ApiFault(404, "Customer not found")
        return contact

    def _count_lost(self, status: str) -> None:
        if status == "expired":
            self.sim.counters.expired_scroll_hits += 1
        else:
            self.sim.counters.unknown_scroll_hits += 1


def drop_connection(request: web.Request) -> web.Response:
    """Close the connection without an answer (a fault: the client sees a disconnect)."""
    transport = request.transport
    if transport is not None:
        transport.abort()
    return web.Response(status=499)
