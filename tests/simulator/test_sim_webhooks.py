"""Spec §6.2: webhook payloads, and the emitter posting them to a tiny receiver."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from asyncwifi.testing import Simulator, make_webhook_payload
from asyncwifi.testing._webhooks import WEBHOOK_TYPES


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[str, list[tuple[dict[str, str], Any]]]]:
    """A receiver on a free port answering 202; yields its URL and what it got."""
    got: list[tuple[dict[str, str], Any]] = []

    async def hook(request: web.Request) -> web.Response:
        got.append((dict(request.headers), await request.json()))
        return web.Response(status=202)

    app = web.Application()
    app.router.add_post("/hook", hook)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}/hook", got
    await runner.cleanup()


def test_every_moment_has_the_documented_shape() -> None:
    assert len(WEBHOOK_TYPES) == 19
    for moment in WEBHOOK_TYPES:
        payload = make_webhook_payload(moment, seed=4)
        expected = {"hotspot", "organization", "location", "event", "contact"}
        assert set(payload) == expected | ({"geofence"} if moment.startswith("geo-") else set())
        event = payload["event"]
        assert set(event) == {"type", "nonce", "dwellTime", "timestamp"}
        assert event["type"] == moment
        assert isinstance(event["timestamp"], int)
        has_dwell = moment in ("dwell", "leave", "geo-dwell", "geo-leave")
        assert (event["dwellTime"] is not None) is has_dwell
        assert (payload["hotspot"]["id"] is not None) is (moment in ("signup", "login"))
        contact = payload["contact"]
        assert {"optin", "customFields", "metrics", "extraFields", "birthday"} <= set(contact)
        assert isinstance(contact["metrics"]["visitCount"], int)
        assert set(contact["extraFields"]["extIds"]) == {"id", "prop1", "prop2"}
        defaults = [o for o in contact["optin"] if o["type"] == "LEGACY"]
        assert {o["name"] for o in defaults} >= {"termsOfUse", "privacy"}
        assert all(
            o["accepted"] and o["id"] == 0 for o in defaults if o["name"] != "mktgCommunications"
        )
        assert set(payload["location"]) == {"id", "country", "address", "extId", "tags"}
    geo = make_webhook_payload("geo-dwell")["geofence"]
    assert geo["geometry"]["type"] == "Circle"
    assert len(geo["geometry"]["coordinates"]) == 2


def test_payloads_are_deterministic_and_take_overrides() -> None:
    assert make_webhook_payload("login", seed=1) == make_webhook_payload("login", seed=1)
    assert make_webhook_payload("login", seed=1) != make_webhook_payload("login", seed=2)
    custom = make_webhook_payload(
        "signup", contact={"email": "ada@example.com"}, organization="org-x"
    )
    assert custom["contact"]["email"] == "ada@example.com"
    assert custom["contact"]["firstname"]  # merged, not replaced
    assert custom["organization"]["id"] == "org-x"
    picked = make_webhook_payload("dwell", body_fields=["event.type", "contact.email"])
    assert set(picked) == {"event", "contact"}
    assert set(picked["event"]) == {"type"}
    with pytest.raises(ValueError, match="unknown webhook moment"):
        make_webhook_payload("teleport")


async def test_the_emitter_posts_every_moment_with_configured_headers(
    receiver: tuple[str, list[tuple[dict[str, str], Any]]],
) -> None:
    url, got = receiver
    async with Simulator(contacts=10, events=0) as sim:
        for moment in WEBHOOK_TYPES:
            status = await sim.emit_webhook(url, moment, headers={"X-Secret": "s3"})
            assert status == 202
        assert sim.counters.webhooks_sent == len(WEBHOOK_TYPES)
        assert sim.counters.webhook_statuses[202] == len(WEBHOOK_TYPES)
    assert [body["event"]["type"] for _, body in got] == list(WEBHOOK_TYPES)
    assert all(h["X-Secret"] == "s3" for h, _ in got)
    assert all(h["Content-Type"] == "application/json" for h, _ in got)
    assert len({body["event"]["nonce"] for _, body in got}) == len(got)
    assert {body["organization"]["id"] for _, body in got} == {sim.organization}
    assert {body["contact"]["id"] for _, body in got} <= {c["cid"] for c in sim.data.contacts}
