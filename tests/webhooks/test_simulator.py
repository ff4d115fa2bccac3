"""The simulator's webhook emitter as the sender, over real HTTP, for every §6.2 moment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from asyncwifi.models._webhook import WEBHOOK_EVENT_TYPES, WebhookPayload
from asyncwifi.testing import Simulator
from asyncwifi.webhooks import Receiver, Spool, WebhookContext
from asyncwifi.webhooks._app import create_app
from tests.webhooks.helpers import HEADER, SECRET, ClientFactory, eventually


async def test_every_moment_from_the_simulator_is_decoded_and_routed(
    make_client: ClientFactory,
) -> None:
    receiver = Receiver(SECRET, header_name=HEADER)
    geo: list[WebhookPayload] = []
    others: list[WebhookPayload] = []
    receiver.add_handler(lambda p, c: geo.append(p), "geo-arriving", "geo-dwell", "geo-leave")
    receiver.fallback(lambda p, c: others.append(p))
    client = await make_client(create_app(receiver))
    url = str(client.make_url("/webhooks"))

    async with Simulator(contacts=20, events=0) as sim:
        for moment in WEBHOOK_EVENT_TYPES:
            assert await sim.emit_webhook(url, moment, headers={HEADER: SECRET}) == 200
        # Without the secret header (or with a wrong one) the receiver refuses the call.
        assert await sim.emit_webhook(url, "signup") == 401
        assert await sim.emit_webhook(url, "signup", headers={HEADER: "guess"}) == 401

    received = geo + others
    assert sorted(p.type or "" for p in received) == sorted(WEBHOOK_EVENT_TYPES)
    assert {p.type for p in geo} == {"geo-arriving", "geo-dwell", "geo-leave"}
    for p in geo:
        assert p.geofence is not None
        assert p.geofence.geometry is not None
        assert len(p.geofence.geometry.coordinates) == 2
    assert len({p.nonce for p in received}) == len(received)  # one nonce per event
    for p in received:
        assert p.contact is not None
        assert p.contact.id
        assert p.organization is not None
        assert p.organization.id == sim.organization


async def test_a_partial_body_still_decodes(make_client: ClientFactory) -> None:
    receiver = Receiver(SECRET, header_name=HEADER)
    seen: list[tuple[WebhookPayload, WebhookContext]] = []
    receiver.fallback(lambda p, c: seen.append((p, c)))
    client = await make_client(create_app(receiver))
    async with Simulator(contacts=5, events=0) as sim:
        status = await sim.emit_webhook(
            str(client.make_url("/webhooks")),
            "dwell",
            headers={HEADER: SECRET},
            body_fields=["event", "contact.email"],
        )
    assert status == 200
    [(p, context)] = seen
    assert p.type == "dwell"
    assert p.location is None
    assert p.contact is not None
    raw = msgspec.json.decode(context.body)
    assert set(raw) == {"event", "contact"}
    assert set(raw["contact"]) == {"email"}
    assert p.contact.email == raw["contact"]["email"]


async def test_durable_receiver_fed_by_the_simulator(
    tmp_path: Path, make_client: ClientFactory
) -> None:
    receiver = Receiver(SECRET, header_name=HEADER)
    bodies: list[Any] = []

    async def keep(payload: WebhookPayload, context: WebhookContext) -> None:
        bodies.append(msgspec.json.decode(context.body))

    receiver.fallback(keep)
    client = await make_client(create_app(receiver, spool=Spool(tmp_path / "spool.sqlite3")))
    url = str(client.make_url("/webhooks"))
    async with Simulator(contacts=10, events=0) as sim:
        statuses = [
            await sim.emit_webhook(url, moment, headers={HEADER: SECRET})
            for moment in ("signup", "login", "presence", "leave")
        ]
    assert statuses == [202, 202, 202, 202]
    await eventually(lambda: len(bodies) == 4)
    # The handler sees the exact bytes sent, every field of them.
    assert [b["event"]["type"] for b in bodies] == ["signup", "login", "presence", "leave"]
    assert all("optin" in b["contact"] for b in bodies)
