"""Webhook deliveries are objects too (spec §8: "objects exchanged via API or webhooks").

A receiver given a store (``Receiver(objects=...)``) counts each delivery it accepted once,
as kind ``"webhooks"``: handled (memory mode), accepted into the spool (durable mode) or
ignored (no handler, acknowledged); never a duplicate, a rejection or a failed handler.
With the store of the API key's clients, their schedulers see the deliveries.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from asyncwifi import ScaledClock
from asyncwifi.errors import ConfigurationError
from asyncwifi.ratelimit import MemoryStore, RateStore, RedisStore, Scheduler
from asyncwifi.ratelimit._volume import ObjectCounts
from asyncwifi.testing import Simulator
from asyncwifi.webhooks import Receiver, create_app, serve
from tests.client._support import client_for
from tests.webhooks.helpers import HEADER, NOW, SECRET, ClientFactory, auth, body_of, webhook_clock


def receiver(store: RateStore | None, **kw: Any) -> Receiver:
    kw.setdefault("clock", webhook_clock())
    return Receiver(SECRET, header_name=HEADER, objects=store, **kw)


async def counted(store: RateStore, now: float = NOW) -> dict[str, int]:
    return dict((await store.object_counts(now)).this_month)


async def test_each_accepted_delivery_counts_once_and_nothing_else_counts(
    make_client: ClientFactory,
) -> None:
    store = MemoryStore()
    r = receiver(store, max_age=3_600)
    failures = [1]

    @r.on("signup")
    async def signup(payload: Any, context: Any) -> None:
        if failures and payload.nonce == "n-fails":
            failures.pop()
            raise RuntimeError("the handler failed once")

    @r.on("login")
    async def login(payload: Any, context: Any) -> None:
        pass

    client = await make_client(create_app(r))

    async def post(body: bytes, headers: dict[str, str] | None = None) -> int:
        response = await client.post("/webhooks", data=body, headers=headers or auth())
        return response.status

    assert await post(body_of("signup", nonce="n-1")) == 200
    assert await post(body_of("login", nonce="n-2")) == 200
    assert await post(body_of("signup", nonce="n-1")) == 200  # a redelivery: a duplicate
    assert await counted(store) == {"webhooks": 2}
    # refused: wrong secret, not JSON, malformed, wrong shape, too old
    assert await post(body_of(), auth("wrong")) == 401
    assert await post(body_of(), {HEADER: SECRET, "Content-Type": "text/plain"}) == 415
    assert await post(b'{"event": ', auth()) == 400
    assert await post(b"[1, 2]", auth()) == 422
    assert await post(body_of(timestamp=NOW - 7_200), auth()) == 409
    # a handler that fails is not an accepted delivery; its redelivery is, once
    assert await post(body_of("signup", nonce="n-fails")) == 500
    assert await counted(store) == {"webhooks": 2}
    assert await post(body_of("signup", nonce="n-fails")) == 200
    # no handler for the type: acknowledged (the platform sent it), counted
    assert await post(body_of("visit", nonce="n-3")) == 200
    assert await counted(store) == {"webhooks": 4}
    assert await counted(store, NOW + 40 * 86_400) == {}  # the month after: nothing yet
    await r.aclose()


@pytest.mark.parametrize("durable", [False, True])
async def test_a_redelivered_event_of_a_type_with_no_handler_counts_once(
    make_client: ClientFactory, tmp_path: Path, durable: bool
) -> None:
    store = MemoryStore()
    r = receiver(store)
    r.on("signup")(lambda payload, context: None)
    spool = tmp_path / "spool.sqlite3" if durable else None
    client = await make_client(create_app(r, spool=spool))
    statuses = []
    for nonce in ("v-1", "v-1", "v-2", "v-1"):  # "visit": no handler, acknowledged
        response = await client.post(
            "/webhooks", data=body_of("visit", nonce=nonce), headers=auth()
        )
        statuses.append((response.status, (await response.json())["status"]))
    assert statuses == [
        (200, "ignored"), (200, "duplicate"), (200, "ignored"), (200, "duplicate")
    ]  # fmt: skip
    assert await counted(store) == {"webhooks": 2}  # one per delivery (was 4)
    await r.aclose()


async def test_durable_mode_counts_what_it_spooled(
    make_client: ClientFactory, tmp_path: Path
) -> None:
    store = MemoryStore()
    r = receiver(store)
    r.fallback(lambda payload, context: None)
    client = await make_client(create_app(r, spool=tmp_path / "spool.sqlite3"))
    statuses = []
    for nonce in ("a", "b", "a", "c", "b"):
        response = await client.post("/webhooks", data=body_of(nonce=nonce), headers=auth())
        statuses.append(response.status)
    assert statuses == [202, 202, 200, 202, 200]
    assert await counted(store) == {"webhooks": 3}
    await r.aclose()


async def test_a_store_that_fails_does_not_fail_the_delivery(
    make_client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken(MemoryStore):
        async def add_objects(self, now: float, kind: str, count: int) -> ObjectCounts:
            raise OSError("the store is gone")

    r = receiver(Broken())
    r.fallback(lambda payload, context: None)
    client = await make_client(create_app(r))
    with caplog.at_level(logging.ERROR, "asyncwifi.webhooks"):
        response = await client.post("/webhooks", data=body_of(), headers=auth())
    assert response.status == 200
    assert "could not count a webhook delivery" in caplog.text
    await r.aclose()


def test_objects_must_be_a_store() -> None:
    with pytest.raises(ConfigurationError, match="RateStore"):
        receiver(Scheduler())  # type: ignore[arg-type]


async def test_the_receiver_keeps_a_shared_store_open_until_it_is_closed() -> None:
    class Closing(MemoryStore):
        closed = 0

        async def aclose(self) -> None:
            self.closed += 1

    store = Closing()
    r = receiver(store)
    async with Scheduler(store=store):  # a client on the same store, closed first
        pass
    assert store.closed == 0
    await r.aclose()
    await r.aclose()  # again: no effect
    assert store.closed == 1


async def test_without_a_store_nothing_is_counted(make_client: ClientFactory) -> None:
    r = receiver(None)
    r.fallback(lambda payload, context: None)
    client = await make_client(create_app(r))
    assert (await client.post("/webhooks", data=body_of(), headers=auth())).status == 200
    assert r.objects is None
    await r.aclose()


@asynccontextmanager
async def served(r: Receiver) -> AsyncIterator[str]:
    """``serve(r)`` on a free port, cancelled after; its URL."""
    ready: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serve(r, port=0, on_ready=ready.set_result))
    try:
        yield f"http://127.0.0.1:{await ready}/webhooks"
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def deliver(sim: Simulator, url: str) -> list[int]:
    """Three deliveries, a redelivery and a stranger's, posted by the simulator."""
    statuses = [
        await sim.emit_webhook(url, moment, headers={HEADER: SECRET}, event={"nonce": nonce})
        for moment, nonce in (("signup", "n-1"), ("login", "n-2"), ("leave", "n-3"))
    ]
    statuses.append(
        await sim.emit_webhook(url, "signup", headers={HEADER: SECRET}, event={"nonce": "n-1"})
    )
    statuses.append(await sim.emit_webhook(url, headers={HEADER: "wrong"}))
    return statuses


async def test_a_client_on_the_same_store_sees_the_deliveries() -> None:
    clock = ScaledClock(100)
    store = MemoryStore()
    async with Simulator(clock=clock, segments=6) as sim:
        r = Receiver(SECRET, header_name=HEADER, clock=clock, objects=store)
        r.on("signup", "login", "leave")(lambda payload, context: None)
        async with client_for(sim, rate_store=store) as api, served(r) as url:
            assert await deliver(sim, url) == [200, 200, 200, 200, 401]
            await api.segments.list()
            assert await api.scheduler.objects() == {"webhooks": 3, "segments": 6}
            assert api.quota.volume.this_month == {"webhooks": 3, "segments": 6}


@pytest.mark.redis
async def test_a_client_on_the_same_redis_key_sees_the_deliveries(redis_url: str) -> None:
    """The receiver's process and the client's each have a RedisStore on the key."""
    clock = ScaledClock(100)
    prefix = f"asyncwifi:test:wh:{uuid.uuid4().hex[:10]}:"
    theirs = RedisStore(redis_url, key="acct", prefix=prefix, use_redis_time=False)
    ours = RedisStore(redis_url, key="acct", prefix=prefix, use_redis_time=False)
    async with Simulator(clock=clock, segments=6) as sim:
        r = Receiver(SECRET, header_name=HEADER, clock=clock, objects=theirs)
        r.on("signup", "login", "leave")(lambda payload, context: None)
        async with client_for(sim, rate_store=ours) as api:
            async with served(r) as url:  # serve() closes the receiver and its store
                assert await deliver(sim, url) == [200, 200, 200, 200, 401]
            await api.segments.list()
            assert await api.scheduler.objects() == {"webhooks": 3, "segments": 6}
    client = aioredis.Redis.from_url(redis_url)
    keys = [k async for k in client.scan_iter(f"{prefix}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()
