"""Hotspots (access points): spec §2.2 and the bodies and envelopes of §4.3."""

from __future__ import annotations

from msgspec import UNSET, UnsetType

from asyncwifi.models._base import Model

__all__ = [
    "Hotspot",
    "HotspotCreate",
    "HotspotDeleteResult",
    "HotspotEnvelope",
    "HotspotPage",
    "HotspotUpdate",
    "HotspotWriteResult",
]


class Hotspot(Model):
    """A hotspot (Wi-Fi access point), spec §2.2."""

    id: str | None = None
    name: str | None = None
    description: str | None = None
    firmware: str | None = None
    vendor: str | None = None
    hotspot_identifier: str | None = None
    date: str | None = None
    mac_address: str | None = None
    venue_id: str | None = None
    country: str | None = None
    city: str | None = None
    address: str | None = None
    latitude: float | None = None
    longitude: float | None = None
    deleted: bool | None = None
    # spec §3: hotspots carry ``enabled`` (settable on update, §4.3) though §2.2 omits it
    enabled: bool | None = None


class HotspotPage(Model):
    """``GET /v3/hotspots/organizations/{cid}`` response (spec §4.3)."""

    status: str | None = None
    generated: str | None = None
    count: int | None = None
    hotspots: list[Hotspot] | None = None


class HotspotEnvelope(Model):
    """``GET /v3/hotspots/{id}`` and ``/identifier/{identifier}`` response (spec §4.3)."""

    status: str | None = None
    generated: str | None = None
    hotspot: Hotspot | None = None


class HotspotWriteResult(Model):
    """Response of a hotspot create or update (spec §4.3)."""

    generated: str | None = None
    status: str | None = None
    location_id: str | None = None
    hotspot_id: str | None = None


class HotspotDeleteResult(Model):
    """Response of a hotspot delete (spec §4.3)."""

    generated: str | None = None
    status: str | None = None


class HotspotCreate(Model):
    """Body of ``POST /v3/hotspots`` (spec §4.3).

    A field left ``UNSET`` is not sent at all. ``router_type`` decides which of
    ``mac_address``, ``hotspot_identifier`` and ``ssid`` are needed (rules: not shown);
    with ``address_as_location`` false, ``country`` and the address fields are required.
    """

    organization_id: str | UnsetType = UNSET
    venue_id: str | UnsetType = UNSET
    name: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    router_type: str | UnsetType = UNSET
    mac_address: str | UnsetType = UNSET
    hotspot_identifier: str | UnsetType = UNSET
    ssid: str | UnsetType = UNSET
    address_as_location: bool | UnsetType = UNSET
    #: ISO 3166-1 alpha-2
    country: str | UnsetType = UNSET
    address: str | UnsetType = UNSET
    city: str | UnsetType = UNSET
    state: str | UnsetType = UNSET
    zip: str | UnsetType = UNSET
    latitude: float | UnsetType = UNSET
    longitude: float | UnsetType = UNSET


class HotspotUpdate(Model):
    """Body of ``PUT /v3/hotspots/{id}`` (spec §4.3).

    Only these fields exist: venueId, routerType, macAddress, hotspotIdentifier and ssid
    are not allowed on update, so the type cannot carry them. ``UNSET`` fields are not sent.
    """

    name: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    #: ISO 3166-1 alpha-2
    country: str | UnsetType = UNSET
    address: str | UnsetType = UNSET
    city: str | UnsetType = UNSET
    state: str | UnsetType = UNSET
    zip: str | UnsetType = UNSET
    latitude: float | UnsetType = UNSET
    longitude: float | UnsetType = UNSET
    enabled: bool | UnsetType = UNSET
