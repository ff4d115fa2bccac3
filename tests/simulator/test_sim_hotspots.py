"""Spec §4.3: hotspots: list filters, reads, create/update validation, soft delete."""

from __future__ import annotations

from typing import Any

import pytest

from asyncwifi.testing import Simulator
from asyncwifi.testing._validation import ROUTER_TYPES, UPDATE_FORBIDDEN
from tests.simulator.simhelpers import Caller

LIST = "/v3/hotspots/organizations/"


def new_hotspot(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "venueId": "venue-new",
        "name": "Lobby",
        "description": "by the door",
        "routerType": "meraki",
        "macAddress": "0A-1B-2C-3D-4E-5F",
        "addressAsLocation": False,
        "country": "IT",
        "address": "Via Roma 1",
        "city": "Milano",
        "zip": "20100",
        "latitude": 45.46,
        "longitude": 9.19,
    }
    body.update(changes)
    return {k: v for k, v in body.items() if v is not None}


async def hotspots(caller: Caller, **params: str) -> list[dict[str, Any]]:
    answer = await caller.get(caller.org(LIST), **params)
    assert answer.status == 200, answer.body
    body = answer.json
    assert body["count"] == len(body["hotspots"])
    assert body["status"] == "OK"
    return list(body["hotspots"])


async def test_list_filters(caller: Caller, simulator: Simulator) -> None:
    everything = await hotspots(caller)
    assert len(everything) == 12
    first = everything[0]
    assert set(first) >= {
        "id", "name", "description", "firmware", "vendor", "hotspotIdentifier", "date",
        "macAddress", "venueId", "country", "city", "address", "latitude", "longitude",
        "deleted",
    }  # fmt: skip
    by_mac = await hotspots(caller, macAddress=first["macAddress"].upper().replace(":", "-"))
    assert [h["id"] for h in by_mac] == [first["id"]]
    assert [h["id"] for h in await hotspots(caller, hotspotIdentifier="ap-0002")] == [
        everything[1]["id"]
    ]
    venue = first["venueId"]
    assert all(h["venueId"] == venue for h in await hotspots(caller, venueId=venue))
    named = await hotspots(caller, name=first["name"][:6].lower())
    assert first["id"] in {h["id"] for h in named}
    cut = sorted(h["date"][:10] for h in everything)[6]
    older = await hotspots(caller, dateLt=cut)
    newer = await hotspots(caller, dateGt=cut)
    assert all(h["date"][:10] < cut for h in older)
    assert all(h["date"][:10] > cut for h in newer)
    assert len(older) + len(newer) == 11
    for bad in ({"dateGt": "01/02/2024"}, {"macAddress": "zz"}, {"deleted": "perhaps"}):
        assert (await caller.get(caller.org(LIST), **bad)).status == 409, bad


async def test_reads_by_id_and_identifier(caller: Caller, simulator: Simulator) -> None:
    hotspot = next(iter(simulator.data.hotspots.values()))
    one = await caller.get(f"/v3/hotspots/{hotspot['id']}")
    assert one.status == 200
    assert set(one.json) == {"status", "generated", "hotspot"}
    assert one.json["hotspot"]["id"] == hotspot["id"]
    ident = await caller.get(f"/v3/hotspots/identifier/{hotspot['hotspotIdentifier']}")
    assert ident.json["hotspot"]["id"] == hotspot["id"]
    assert (await caller.get("/v3/hotspots/nope")).status == 404
    missing = await caller.get("/v3/hotspots/identifier/nope")
    assert missing.status == 404
    assert missing.message


async def test_create_persists(caller: Caller) -> None:
    answer = await caller.call("POST", "/v3/hotspots", json_body=new_hotspot())
    assert answer.status == 201
    body = answer.json
    assert set(body) == {"generated", "status", "locationId", "hotspotId"}
    assert body["locationId"] == "venue-new"
    stored = (await caller.get(f"/v3/hotspots/{body['hotspotId']}")).json["hotspot"]
    assert stored["macAddress"] == "0a:1b:2c:3d:4e:5f"
    assert stored["city"] == "Milano"
    assert stored["deleted"] is False
    assert body["hotspotId"] in {h["id"] for h in await hotspots(caller)}
    again = await caller.call("POST", "/v3/hotspots", json_body=new_hotspot(name="Twin"))
    assert again.status == 409  # the same MAC address is already in use


async def test_address_taken_from_the_location(caller: Caller, simulator: Simulator) -> None:
    location = simulator.data.locations[1]
    body = new_hotspot(
        venueId=location["id"], addressAsLocation=True, country=None, address=None,
        city=None, zip=None,
    )  # fmt: skip
    answer = await caller.call("POST", "/v3/hotspots", json_body=body)
    assert answer.status == 201, answer.body
    stored = (await caller.get(f"/v3/hotspots/{answer.json['hotspotId']}")).json["hotspot"]
    assert (stored["city"], stored["country"]) == (location["city"], location["country"])


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"country": None}, "country"),
        ({"country": "XX"}, "country"),
        ({"country": "ITA"}, "country"),
        ({"address": None}, "address"),
        ({"city": ""}, "city"),
        ({"zip": None}, "zip"),
        ({"name": None}, "name"),
        ({"venueId": None}, "venueId"),
        ({"routerType": "toaster"}, "routerType"),
        ({"macAddress": None}, "macAddress"),
        ({"macAddress": "not-a-mac"}, "macAddress"),
        ({"ssid": "Guests"}, "ssid"),
        ({"routerType": "cisco-wlc"}, "hotspotIdentifier"),
        ({"routerType": "generic", "ssid": "Guests"}, "macAddress"),
        ({"routerType": "ubiquiti", "hotspotIdentifier": "x"}, "hotspotIdentifier"),
        ({"addressAsLocation": True}, "venueId"),
        ({"addressAsLocation": "no"}, "addressAsLocation"),
        ({"latitude": 91}, "latitude"),
        ({"longitude": "east"}, "longitude"),
        ({"name": 42}, "name"),
        ({"organizationId": "org-other"}, "organizationId"),
    ],
)
async def test_create_validation(caller: Caller, changes: dict[str, Any], fragment: str) -> None:
    answer = await caller.call("POST", "/v3/hotspots", json_body=new_hotspot(**changes))
    assert answer.status == 409
    assert fragment in answer.message


@pytest.mark.parametrize("router", sorted(ROUTER_TYPES))
async def test_every_router_type_accepts_its_required_fields(caller: Caller, router: str) -> None:
    rules = ROUTER_TYPES[router]
    values = {"macAddress": "02:00:00:00:00:99", "hotspotIdentifier": "ap-x", "ssid": "Guests"}
    body = new_hotspot(routerType=router, macAddress=None)
    body.update({k: v for k, v in values.items() if rules[k] == "required"})
    answer = await caller.call("POST", "/v3/hotspots", json_body=body)
    assert answer.status == 201, answer.body


@pytest.mark.parametrize("field", UPDATE_FORBIDDEN)
async def test_update_refuses_identity_fields(
    caller: Caller, simulator: Simulator, field: str
) -> None:
    hid = next(iter(simulator.data.hotspots))
    answer = await caller.call("PUT", f"/v3/hotspots/{hid}", json_body={field: "x"})
    assert answer.status == 409
    assert field in answer.message


async def test_update_takes_effect_and_keeps_the_address_rule(
    caller: Caller, simulator: Simulator
) -> None:
    hid = next(iter(simulator.data.hotspots))
    answer = await caller.call(
        "PUT", f"/v3/hotspots/{hid}", json_body={"name": "Renamed", "enabled": False}
    )
    assert answer.status == 200
    assert answer.json["hotspotId"] == hid
    stored = (await caller.get(f"/v3/hotspots/{hid}")).json["hotspot"]
    assert (stored["name"], stored["enabled"]) == ("Renamed", False)
    partial = await caller.call("PUT", f"/v3/hotspots/{hid}", json_body={"city": "Roma"})
    assert partial.status == 409
    whole = {"country": "fr", "address": "1 rue X", "city": "Paris", "zip": "75001"}
    assert (await caller.call("PUT", f"/v3/hotspots/{hid}", json_body=whole)).status == 200
    stored = (await caller.get(f"/v3/hotspots/{hid}")).json["hotspot"]
    assert (stored["city"], stored["country"]) == ("Paris", "FR")
    assert (await caller.call("PUT", "/v3/hotspots/nope", json_body={"name": "x"})).status == 404


async def test_delete_is_a_soft_delete(caller: Caller, simulator: Simulator) -> None:
    hid = next(iter(simulator.data.hotspots))
    answer = await caller.call("DELETE", f"/v3/hotspots/{hid}")
    assert answer.status == 200
    assert set(answer.json) == {"generated", "status"}
    assert hid not in {h["id"] for h in await hotspots(caller)}
    assert [h["id"] for h in await hotspots(caller, deleted="true")] == [hid]
    assert (await caller.get(f"/v3/hotspots/{hid}")).json["hotspot"]["deleted"] is True
    assert (await caller.call("DELETE", f"/v3/hotspots/{hid}")).status == 404
    assert (await caller.call("PUT", f"/v3/hotspots/{hid}", json_body={"name": "x"})).status == 404


async def test_segments_list(caller: Caller, simulator: Simulator) -> None:
    answer = await caller.get(caller.org("/v2/segments/organizations/"))
    assert answer.status == 200
    body = answer.json
    assert set(body) == {"generated", "size", "segments"}
    assert body["size"] == len(body["segments"]) == 6
    assert set(body["segments"][0]) == {
        "id", "name", "description", "lastRun", "created", "modified", "segmentStatus",
        "audience",
    }  # fmt: skip
    assert (await caller.get("/v2/segments/organizations/other")).status == 403
