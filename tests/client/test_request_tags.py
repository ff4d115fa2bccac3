"""Each request carries the tag of what it asks for, passed by the caller that knows it (the
pipeline sniffs nothing): for every endpoint, the tag agrees with the route's
(``_protocol.request_tag``) and is a word of the one vocabulary (``_protocol.TAGS``)."""

from __future__ import annotations

from typing import Any

import pytest

from asyncwifi import HotspotUpdate, Policy
from asyncwifi._core import RequestPipeline
from asyncwifi._protocol import TAGS, request_tag
from tests.client._support import client_for
from tests.client.test_endpoints import new_hotspot


async def test_every_request_is_tagged_as_its_route(
    make_sim: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, str]] = []
    attempt = RequestPipeline._attempt

    async def recording(self: RequestPipeline, call: Any) -> Any:
        seen.append((call.path, call.tag))
        return await attempt(self, call)

    monkeypatch.setattr(RequestPipeline, "_attempt", recording)
    async with make_sim(contacts=12, events=50) as sim, client_for(sim) as api:
        contacts = [c async for c in api.contacts.list(size=5)]
        cid = contacts[0].cid or ""
        await api.contacts.get(cid)
        for extra in (api.contacts.events, api.contacts.devices, api.contacts.accountings):
            await extra(cid)
        await api.contacts.update_policies(cid, [Policy(name="mktgCommunications", accepted=False)])
        await api.contacts.delete(cid)
        listed = await api.hotspots.list()
        await api.hotspots.get(listed[0].id or "")
        created = await api.hotspots.create(new_hotspot(1))
        await api.hotspots.update(created.hotspot_id or "", HotspotUpdate(name="AP one"))
        await api.hotspots.delete(created.hotspot_id or "")
        await api.segments.list()
        [e async for e in api.events.list(size=20)]
        [k async for k in api.events.keys(size=20)]
        await api.events.for_customer(contacts[1].cid or "")
        await api.logout()
    assert seen
    assert [(path, tag) for path, tag in seen if tag != request_tag(path)] == []
    assert {tag for _, tag in seen} == set(TAGS) - {"other"}
