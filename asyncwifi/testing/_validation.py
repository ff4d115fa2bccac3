"""Hotspot body rules (spec §4.3), sans-I/O: each violation is a :class:`BadParameter` (409).

The spec leaves the router types and their rules "not shown"; the simulator's choice is
``ROUTER_TYPES`` below (``required`` / ``optional`` / ``forbidden`` for each of macAddress,
hotspotIdentifier and ssid). When ``addressAsLocation`` is false (the default), ``country``,
``address``, ``city`` and ``zip`` are required and ``state`` is optional; when it is true
they are copied from the venue (which must then be a known location).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from asyncwifi import _rules
from asyncwifi.testing._util import BadParameter

__all__ = [
    "COUNTRIES",
    "REQUIRED_ADDRESS_FIELDS",
    "ROUTER_TYPES",
    "UPDATE_FORBIDDEN",
    "check_create",
    "check_update",
    "normalize_mac",
]

#: the one table shared with the client's validation (spec §4.3: "not shown": assumption)
ROUTER_TYPES = _rules.ROUTER_TYPES
#: spec §4.3: fields required when addressAsLocation is false (state stays optional)
REQUIRED_ADDRESS_FIELDS = _rules.ADDRESS_FIELDS
#: spec §4.3: properties refused on update
UPDATE_FORBIDDEN = tuple(sorted(_rules.HOTSPOT_UPDATE_FORBIDDEN))
#: ISO 3166-1 alpha-2 codes (the 249 officially assigned)
COUNTRIES = _rules.COUNTRY_CODES

_STRINGS_CREATE = (
    "organizationId",
    "venueId",
    "name",
    "description",
    "routerType",
    "macAddress",
    "hotspotIdentifier",
    "ssid",
    "country",
    "address",
    "city",
    "state",
    "zip",
)
_STRINGS_UPDATE = ("name", "description", "country", "address", "city", "state", "zip")
_MAC = re.compile(r"^[0-9A-Fa-f]{2}([:-]?)[0-9A-Fa-f]{2}(\1[0-9A-Fa-f]{2}){4}$")


def normalize_mac(value: str) -> str:
    """A MAC address in lower case with colons, or 409."""
    if not _MAC.match(value.strip()):
        raise BadParameter(f"macAddress is not a MAC address: {value!r}")
    digits = re.sub(r"[^0-9a-f]", "", value.lower())
    return ":".join(digits[i : i + 2] for i in range(0, 12, 2))


def _check_types(body: Mapping[str, Any], strings: tuple[str, ...]) -> None:
    for key in strings:
        if key in body and body[key] is not None and not isinstance(body[key], str):
            raise BadParameter(f"{key} must be a string")
    for key in ("latitude", "longitude"):
        value = body.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise BadParameter(f"{key} must be a number")
    if body.get("latitude") is not None and not -90 <= body["latitude"] <= 90:
        raise BadParameter("latitude must be between -90 and 90")
    if body.get("longitude") is not None and not -180 <= body["longitude"] <= 180:
        raise BadParameter("longitude must be between -180 and 180")


def _check_address(body: Mapping[str, Any]) -> None:
    missing = [k for k in REQUIRED_ADDRESS_FIELDS if not body.get(k)]
    if missing:
        raise BadParameter(f"{', '.join(missing)} required when addressAsLocation is false")
    country = body["country"]
    if country.upper() not in COUNTRIES or len(country) != 2:
        raise BadParameter(f"country must be an ISO 3166-1 alpha-2 code, got {country!r}")


def check_create(body: Any, *, venue_known: bool) -> dict[str, Any]:
    """Validate a create body (spec §4.3); returns it normalized (country upper, MAC)."""
    if not isinstance(body, dict):
        raise BadParameter("the body must be a JSON object")
    _check_types(body, _STRINGS_CREATE)
    for key in ("name", "venueId", "routerType"):
        if not body.get(key):
            raise BadParameter(f"{key} is required")
    router = body["routerType"]
    rules = ROUTER_TYPES.get(router)
    if rules is None:
        raise BadParameter(f"routerType must be one of {', '.join(sorted(ROUTER_TYPES))}")
    for field, rule in rules.items():
        present = bool(body.get(field))
        if rule == "required" and not present:
            raise BadParameter(f"{field} is required for routerType {router}")
        if rule == "forbidden" and field in body and body[field] is not None:
            raise BadParameter(f"{field} is not allowed for routerType {router}")
    as_location = body.get("addressAsLocation", False)
    if not isinstance(as_location, bool):
        raise BadParameter("addressAsLocation must be a boolean")
    if as_location:
        if not venue_known:
            raise BadParameter("addressAsLocation needs a known venueId")
    else:
        _check_address(body)
    out = dict(body)
    if out.get("macAddress"):
        out["macAddress"] = normalize_mac(out["macAddress"])
    if out.get("country"):
        out["country"] = out["country"].upper()
    return out


def check_update(body: Any) -> dict[str, Any]:
    """Validate an update body (spec §4.3): forbidden properties, types, address rule.

    An update is partial; when it carries any address field (and ``addressAsLocation`` is
    not true), the address is replaced as a whole, so all required fields must be there.
    """
    if not isinstance(body, dict):
        raise BadParameter("the body must be a JSON object")
    refused = [k for k in UPDATE_FORBIDDEN if k in body]
    if refused:
        raise BadParameter(f"{', '.join(refused)} cannot be changed on update")
    _check_types(body, _STRINGS_UPDATE)
    if "enabled" in body and not isinstance(body["enabled"], bool):
        raise BadParameter("enabled must be a boolean")
    as_location = body.get("addressAsLocation", False)
    if not isinstance(as_location, bool):
        raise BadParameter("addressAsLocation must be a boolean")
    touches_address = any(k in body for k in (*REQUIRED_ADDRESS_FIELDS, "state"))
    if body.get("addressAsLocation") is False or (touches_address and not as_location):
        _check_address(body)
    out = dict(body)
    if out.get("country"):
        out["country"] = out["country"].upper()
    return out
