"""The API's OpenAPI definition (spec §9.4), served by the simulator, and the simulator held to
it (issue 33): schemathesis's response and status conformance checks against the simulator,
and what the reference types a string or a number never served as null (item 6)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import aiohttp

from asyncwifi import ScaledClock
from asyncwifi.testing import Simulator
from asyncwifi.testing._admin import openapi_definition

#: schemathesis's examples per operation and seed: a short, reproducible run (about 10 s)
EXAMPLES = 25
SEED = 33


async def _get(sim: Simulator, path: str, token: str | None = None, **query: str) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(sim.url(path), params=query, headers=headers) as resp,
    ):
        return resp.status, await resp.json(content_type=None)


async def _token(sim: Simulator) -> str:
    body = {"clientKey": sim.client_key, "clientSecret": sim.client_secret}
    async with (
        aiohttp.ClientSession() as session,
        session.post(sim.url("/v1/sts/login/services"), json=body) as resp,
    ):
        return str((await resp.json())["token"])


def test_the_definition_follows_the_reference() -> None:
    doc = json.loads(openapi_definition())
    assert doc["openapi"].startswith("3.1")
    schemas = doc["components"]["schemas"]
    # both event shapes (observed.md), either accepted
    assert schemas["Event"]["anyOf"] == [
        {"$ref": "#/components/schemas/EventFlat"},
        {"$ref": "#/components/schemas/EventNested"},
    ]
    # spec §2: numbers are "number", never narrowed to integers the reference does not say
    text = json.dumps(doc)
    assert '"integer"' not in text.replace('"schema": {"type": "integer"}', "")
    for name in ("Contact", "Hotspot", "Segment", "EventFlat", "EventNested", "ContactList"):
        assert "required" not in schemas[name]  # "not shown": nothing invented
        assert schemas[name].get("additionalProperties", True) is not False
    assert schemas["ContactList"]["properties"]["totalCount"] == {"type": "number"}


async def test_the_simulator_serves_it_without_a_token_and_uncounted() -> None:
    async with Simulator(clock=ScaledClock(100)) as sim:
        status, doc = await _get(sim, "/openapi.json")
        assert status == 200
        assert doc == json.loads(openapi_definition())
        assert sim.counters.requests == 0  # not behind the gateway: no quota spent


async def test_string_fields_and_coordinates_are_never_served_null() -> None:
    # item 6: spec §2.1 types email, phone, phoneNumber and phonePrefix "string", §2.2 the
    # coordinates "number": a contact without them, or a hotspot created without them, is
    # served without the field, never with a null
    async with Simulator(clock=ScaledClock(100), contacts=60) as sim:
        token = await _token(sim)
        assert any(c["email"] is None for c in sim.data.contacts)  # some have no email
        _, page = await _get(
            sim, f"/v2/customers/organizations/{sim.organization}", token, size="100"
        )
        assert len(page["customers"]) == 60
        for contact in page["customers"]:
            for name in ("email", "phone", "phoneNumber", "phonePrefix"):
                assert contact.get(name, "") is not None, (name, contact["cid"])
        body = {
            "venueId": sim.data.locations[0]["id"],
            "name": "no coordinates",
            "routerType": "cisco-wlc",
            "addressAsLocation": False,
            "country": "IT",
            "address": "Via Roma 1",
            "city": "Milano",
            "zip": "20100",
            "hotspotIdentifier": "hs-no-coordinates",
        }
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                sim.url("/v3/hotspots"), json=body, headers={"Authorization": f"Bearer {token}"}
            ) as resp,
        ):
            assert resp.status == 201, await resp.text()
            created = (await resp.json())["hotspotId"]
        _, got = await _get(sim, f"/v3/hotspots/{created}", token)
        assert got["hotspot"]["name"] == "no coordinates"
        assert None not in got["hotspot"].values()


async def test_an_events_continuation_checks_its_other_parameters() -> None:
    # item 6: a request carrying scrollId is checked like any other (spec §4.5, §7: 409)
    async with Simulator(clock=ScaledClock(100), events=50) as sim:
        token = await _token(sim)
        path = f"/v1/organizations/{sim.organization}/events"
        status, first = await _get(sim, path, token, enableScroll="true", size="10")
        assert status == 200
        sid = first["scrollId"]
        status, _ = await _get(sim, path, token, scrollId=sid, sortBy="nonsense", size="10")
        assert status == 409
        status, _ = await _get(sim, path, token, scrollId=sid, events="no-such-type", size="10")
        assert status == 409
        status, page = await _get(sim, path, token, scrollId=sid, size="10")
        assert status == 200
        assert len(page["events"]) == 10


async def test_schemathesis_finds_the_simulator_conforming(tmp_path: Path) -> None:
    # schemathesis (examples, coverage and fuzzing phases, deterministic, EXAMPLES per
    # operation) against the simulator: every response's status is one the definition
    # lists and its body matches the schema of that status
    async with Simulator(contacts=30, events=200, rate_limit_mode="off") as sim:
        token = await _token(sim)
        cids = [sim.organization, *(c["cid"] for c in sim.data.contacts[:3])]
        hotspots = list(sim.data.hotspots)[:3]
        idents = [h["hotspotIdentifier"] for h in sim.data.hotspots.values()][:3]
        config = tmp_path / "schemathesis.toml"
        config.write_text(
            "[generation]\nwith-security-parameters = false\n"
            f"[dictionaries.cids]\nvalues = {json.dumps(cids)}\n"
            f"[dictionaries.hotspots]\nvalues = {json.dumps(hotspots)}\n"
            f"[dictionaries.identifiers]\nvalues = {json.dumps(idents)}\n"
            "[parameters]\n"
            '"path.cid" = { dictionary = "cids", probability = 0.8 }\n'
            '"path.hotspotId" = { dictionary = "hotspots", probability = 0.8 }\n'
            '"path.hotspotIdentifier" = { dictionary = "identifiers", probability = 0.8 }\n'
        )
        st = str(Path(sys.executable).parent / "st")
        proc = await asyncio.create_subprocess_exec(
            st,
            "--config-file",
            str(config),
            "run",
            sim.url("/openapi.json"),
            "--url",
            sim.base_url,
            "--checks",
            "status_code_conformance,response_schema_conformance",
            "--max-examples",
            str(EXAMPLES),
            "--generation-deterministic",
            "--phases",
            "examples,coverage,fuzzing",
            "--workers",
            "1",
            "--header",
            f"Authorization: Bearer {token}",
            # the logout revokes the token the run uses (it is tested on its own)
            "--exclude-path",
            "/v1/sts/logout",
            "--no-color",
            "--report-dir",
            str(tmp_path / "report"),
            cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await proc.communicate()
        answered = sim.counters.responses_by_status
    report = out.decode(errors="replace")
    assert proc.returncode == 0, report[-6000:]
    # the run reached the API with a valid token (only the login, with random keys, is
    # refused) and met real data, not only refusals
    assert "403 Forbidden" not in report, report[-3000:]
    assert answered[200] >= 20, answered
