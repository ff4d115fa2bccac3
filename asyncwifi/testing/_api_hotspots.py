"""Hotspots (spec §4.3) and segments (spec §4.4)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from asyncwifi.testing._api import ApiBase, ApiFault, json_body, json_response, touch
from asyncwifi.testing._util import BadParameter, hex_id, iso_ms, iso_z, parse_bool, parse_instant
from asyncwifi.testing._validation import check_create, check_update, normalize_mac

if TYPE_CHECKING:
    from asyncwifi.testing._view import SimulatorView

__all__ = ["HotspotsApi"]


class HotspotsApi(ApiBase):
    """Hotspot and segment endpoints."""

    def __init__(self, sim: SimulatorView) -> None:
        super().__init__(sim)
        self._hotspot_serial = 0

    # -- hotspots (spec §4.3) -------------------------------------------------------------

    async def hotspots_list(self, request: web.Request) -> web.Response:
        """GET /v3/hotspots/organizations/{cid}: filters ``dateGt``, ``dateLt`` (YYYY-MM-DD,
        on ``date``: the last change, or the creation, see ``hotspot_date``), ``name``
        (case-insensitive substring), ``macAddress``, ``hotspotIdentifier``, ``venueId``
        (exact) and ``deleted`` (default false).
        """
        self._org(request)
        q = request.query
        rows = list(self.data.hotspots.values())
        deleted = parse_bool(q.get("deleted"), "deleted", False)
        rows = [h for h in rows if h["deleted"] is deleted]
        for param, op in (("dateGt", ">"), ("dateLt", "<")):
            value = q.get(param)
            if value is None:
                continue
            if len(value) != 10 or value[4] != "-" or value[7] != "-":
                raise BadParameter(f"{param} must be a date YYYY-MM-DD")
            parse_instant(value, param)
            rows = [
                h for h in rows if (h["date"][:10] > value if op == ">" else h["date"][:10] < value)
            ]
        if "name" in q:
            needle = q["name"].lower()
            rows = [h for h in rows if needle in h["name"].lower()]
        if "macAddress" in q:
            mac = normalize_mac(q["macAddress"])
            rows = [h for h in rows if h.get("macAddress") == mac]
        for param in ("hotspotIdentifier", "venueId"):
            if param in q:
                rows = [h for h in rows if h.get(param) == q[param]]
        touch(request, "hotspots", len(rows))
        return json_response(
            {"status": "OK", "generated": iso_ms(self._now()), "count": len(rows), "hotspots": rows}
        )

    def _hotspot(self, hid: str, *, live: bool = False) -> dict[str, Any]:
        h = self.data.hotspots.get(hid)
        if h is None or (live and h["deleted"]):
            raise ApiFault(404, "Hotspot not found")
        return h

    async def hotspot_get(self, request: web.Request) -> web.Response:
        """GET /v3/hotspots/{hotspotId}: ``{status, generated, hotspot}`` (a deleted one
        too, with ``deleted: true``); 404 if unknown."""
        h = self._hotspot(request.match_info["hotspotId"])
        touch(request, "hotspots", 1)
        return json_response({"status": "OK", "generated": iso_ms(self._now()), "hotspot": h})

    async def hotspot_by_identifier(self, request: web.Request) -> web.Response:
        """GET /v3/hotspots/identifier/{hotspotIdentifier}: a live hotspot first, else a
        deleted one; 404 if none."""
        ident = request.match_info["hotspotIdentifier"]
        found = sorted(
            (h for h in self.data.hotspots.values() if h.get("hotspotIdentifier") == ident),
            key=lambda h: bool(h["deleted"]),
        )
        if not found:
            raise ApiFault(404, "Hotspot not found")
        touch(request, "hotspots", 1)
        return json_response(
            {"status": "OK", "generated": iso_ms(self._now()), "hotspot": found[0]}
        )

    def _location(self, venue: str | None) -> dict[str, Any] | None:
        return next((loc for loc in self.data.locations if loc["id"] == venue), None)

    def _unique(self, field: str, value: Any, skip: str | None = None) -> None:
        for h in self.data.hotspots.values():
            if h["id"] != skip and not h["deleted"] and value and h.get(field) == value:
                raise BadParameter(f"a hotspot with this {field} already exists")

    async def hotspot_create(self, request: web.Request) -> web.Response:
        """POST /v3/hotspots: validated by ``_validation.check_create``; answers 201 with
        ``{generated, status, locationId, hotspotId}``. ``organizationId``, when sent, must
        be the caller's; macAddress and hotspotIdentifier are unique among live hotspots."""
        raw = await json_body(request)
        venue = raw.get("venueId") if isinstance(raw, dict) else None
        location = self._location(venue if isinstance(venue, str) else None)
        body = check_create(raw, venue_known=location is not None)
        if body.get("organizationId") not in (None, self.sim.organization):
            raise BadParameter("organizationId does not match the caller's organization")
        self._unique("macAddress", body.get("macAddress"))
        self._unique("hotspotIdentifier", body.get("hotspotIdentifier"))
        now = self._now()
        self._hotspot_serial += 1
        hid = hex_id(self.sim.seed, 0x4057, 1 << 32, self._hotspot_serial)
        address = location if body.get("addressAsLocation") and location else body
        hotspot = {
            "id": hid,
            "name": body["name"],
            "description": body.get("description") or "",
            "firmware": "",
            "vendor": body["routerType"],
            "hotspotIdentifier": body.get("hotspotIdentifier") or "",
            "date": iso_z(now),
            "macAddress": body.get("macAddress") or "",
            "venueId": body["venueId"],
            "country": address.get("country"),
            "city": address.get("city"),
            "address": address.get("address"),
            "state": address.get("state"),
            "zip": address.get("zip"),
            "latitude": body.get("latitude", address.get("latitude")),
            "longitude": body.get("longitude", address.get("longitude")),
            "routerType": body["routerType"],
            "ssid": body.get("ssid") or "",
            "enabled": True,
            "deleted": False,
        }
        # spec §2.2 types the address fields "string" and the coordinates "number", not
        # null: what the body did not give (coordinates, say) is left out, not served null
        hotspot = {key: value for key, value in hotspot.items() if value is not None}
        self.data.hotspots[hid] = hotspot
        touch(request, "hotspots", 1)
        return json_response(
            {
                "generated": iso_ms(now),
                "status": "OK",
                "locationId": body["venueId"],
                "hotspotId": hid,
            },
            status=201,
        )

    async def hotspot_update(self, request: web.Request) -> web.Response:
        """PUT /v3/hotspots/{hotspotId}: a partial update (``_validation.check_update``);
        answers ``{generated, status, locationId, hotspotId}``; 404 if unknown or deleted."""
        h = self._hotspot(request.match_info["hotspotId"], live=True)
        body = check_update(await json_body(request))
        if body.get("addressAsLocation"):
            location = self._location(h["venueId"])
            if location is None:
                raise BadParameter("addressAsLocation needs a known venue")
            for key in ("country", "city", "address", "state", "zip", "latitude", "longitude"):
                h[key] = location[key]
        settable = (
            "name", "description", "country", "address", "city", "state", "zip",
            "latitude", "longitude", "enabled",
        )  # fmt: skip
        changed = {key: body[key] for key in settable if key in body}
        self.data.change_hotspot(h["id"], self._now(), **changed)
        touch(request, "hotspots", 1)
        return json_response(
            {
                "generated": iso_ms(self._now()),
                "status": "OK",
                "locationId": h["venueId"],
                "hotspotId": h["id"],
            }
        )

    async def hotspot_delete(self, request: web.Request) -> web.Response:
        """DELETE /v3/hotspots/{hotspotId}: a soft delete (``deleted: true``); ``{generated,
        status}``; deleting a deleted or unknown hotspot is a 404."""
        h = self._hotspot(request.match_info["hotspotId"], live=True)
        self.data.change_hotspot(h["id"], self._now(), deleted=True)
        touch(request, "hotspots", 1)
        return json_response({"generated": iso_ms(self._now()), "status": "OK"})

    # -- segments (spec §4.4) -------------------------------------------------------------

    async def segments_list(self, request: web.Request) -> web.Response:
        """GET /v2/segments/organizations/{cid}: ``{generated, size, segments}``."""
        self._org(request)
        rows = self.data.segments
        touch(request, "segments", len(rows))
        return json_response(
            {"generated": iso_ms(self._now()), "size": len(rows), "segments": rows}
        )
