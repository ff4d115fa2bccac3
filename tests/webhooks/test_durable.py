"""Durable mode: spooled before the 202, handled by the worker with retries and dead letters.

Retry schedules run on a ScaledClock (1,000 times real time): a backoff of seconds lasts
milliseconds, and the assertions are about the clock's time, never the wall clock's.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from asyncwifi import RetryPolicy, ScaledClock, _sqlite
from asyncwifi.errors import ConfigurationError
from asyncwifi.models._webhook import WebhookPayload
from asyncwifi.webhooks import Receiver, Spool, WebhookContext
from asyncwifi.webhooks._app import create_app
from asyncwifi.webhooks._spool import EventOutcome
from tests.webhooks.helpers import HEADER, SECRET, ClientFactory, auth, body_of, eventually


class Handler:
    """Records deliveries (nonce, attempt, clock time); fails while ``failures`` says so."""

    def __init__(self, clock: Any) -> None:
        self.clock = clock
        self.deliveries: list[tuple[str | None, int, float]] = []
        self.handled: list[str | None] = []
        self.failures: dict[str | None, int] = {}
        self.always_fail: set[str | None] = set()

    async def __call__(self, payload: WebhookPayload, context: WebhookContext) -> None:
        nonce = payload.nonce
        self.deliveries.append((nonce, context.attempt, self.clock.now()))
        assert context.spool_id is not None
        if nonce in self.always_fail:
            raise RuntimeError(f"cannot handle {nonce}")
        if self.failures.get(nonce, 0) > 0:
            self.failures[nonce] -= 1
            raise RuntimeError(f"transient failure for {nonce}")
        self.handled.append(nonce)


def durable(
    tmp_path: Path, *, retry: RetryPolicy | None = None, **kwargs: Any
) -> tuple[Receiver, Handler, Spool]:
    clock = ScaledClock(speed=1000)
    receiver = Receiver(SECRET, header_name=HEADER, clock=clock, **kwargs)
    handler = Handler(clock)
    receiver.fallback(handler)
    return receiver, handler, Spool(tmp_path / "spool.sqlite3")


async def post(client: Any, body: bytes) -> tuple[int, Any]:
    response = await client.post("/webhooks", data=body, headers=auth())
    return response.status, await response.json()


async def test_accepted_means_spooled_then_handled(
    tmp_path: Path, make_client: ClientFactory
) -> None:
    receiver, handler, spool = durable(tmp_path)
    client = await make_client(create_app(receiver, spool=spool))
    assert await post(client, body_of(nonce="d-1")) == (202, {"status": "accepted"})
    await eventually(lambda: handler.handled == ["d-1"])
    assert handler.deliveries[0][:2] == ("d-1", 1)
    for _ in range(200):  # the outcome is committed just after the handler returns
        health = await (await client.get("/healthz")).json()
        if health["spool"]["pending"] == 0:
            break
        await asyncio.sleep(0.01)
    assert health["mode"] == "durable"
    assert health["spool"] == {"pending": 0, "dead_letters": 0}
    assert health["since_start"] == {"handled": 1, "retried": 0, "dead": 0}


async def test_the_event_is_on_disk_before_the_202(
    tmp_path: Path, make_client: ClientFactory
) -> None:
    receiver, _handler, spool = durable(tmp_path)
    release = asyncio.Event()

    @receiver.on("signup")
    async def slow(payload: WebhookPayload, context: WebhookContext) -> None:
        await release.wait()

    client = await make_client(create_app(receiver, spool=spool))
    assert (await post(client, body_of("signup", nonce="disk-1")))[0] == 202
    # Another connection to the file sees the committed row, body and (redacted) headers.
    with contextlib.closing(sqlite3.connect(tmp_path / "spool.sqlite3")) as conn:
        nonce, body, headers = conn.execute("SELECT nonce, body, headers FROM events").fetchone()
    assert nonce == "disk-1"
    assert bytes(body) == body_of("signup", nonce="disk-1")
    assert SECRET.encode() not in headers
    assert b"content-type" in headers
    release.set()


async def test_a_duplicate_is_refused_even_after_a_restart(
    tmp_path: Path, make_client: ClientFactory
) -> None:
    receiver, handler, spool = durable(tmp_path)
    client = await make_client(create_app(receiver, spool=spool))
    assert (await post(client, body_of(nonce="once")))[0] == 202
    await eventually(lambda: handler.handled == ["once"])
    await client.close()
    # A new receiver (empty in-memory de-duplication) on the same spool.
    receiver2, handler2, spool2 = durable(tmp_path)
    client2 = await make_client(create_app(receiver2, spool=spool2))
    assert await post(client2, body_of(nonce="once")) == (200, {"status": "duplicate"})
    assert (await post(client2, body_of(nonce="twice")))[0] == 202
    await eventually(lambda: handler2.handled == ["twice"])


async def test_a_failing_handler_is_retried_with_backoff_and_still_202(
    tmp_path: Path, make_client: ClientFactory
) -> None:
    retry = RetryPolicy(max_attempts=5, backoff_base=2.0)
    receiver, handler, spool = durable(tmp_path)
    handler.failures["flaky"] = 2
    client = await make_client(create_app(receiver, spool=spool, retry=retry))
    assert await post(client, body_of(nonce="flaky")) == (202, {"status": "accepted"})
    await eventually(lambda: handler.handled == ["flaky"])
    assert [(n, a) for n, a, _ in handler.deliveries] == [("flaky", 1), ("flaky", 2), ("flaky", 3)]
    times = [t for _, _, t in handler.deliveries]
    assert times[1] - times[0] >= 2.0  # clock seconds
    assert times[2] - times[1] >= 4.0  # doubled
    assert (await spool.counts())["dead_letters"] == 0


async def test_a_handler_that_keeps_failing_moves_the_event_to_dead_letters(
    tmp_path: Path, make_client: ClientFactory
) -> None:
    retry = RetryPolicy(max_attempts=3, backoff_base=1.0)
    receiver, handler, spool = durable(tmp_path)
    handler.always_fail.add("doomed")
    client = await make_client(create_app(receiver, spool=spool, retry=retry))
    assert (await post(client, body_of(nonce="doomed")))[0] == 202
    assert (await post(client, body_of(nonce="fine")))[0] == 202

    async def dead() -> int:
        return (await spool.counts())["dead_letters"]

    for _ in range(500):
        if await dead():
            break
        await asyncio.sleep(0.01)
    [letter] = await spool.dead_letters()
    assert letter.nonce == "doomed"
    assert letter.attempts == 3
    assert letter.last_error == "RuntimeError: cannot handle doomed"
    assert letter.body == body_of(nonce="doomed")
    assert [a for n, a, _ in handler.deliveries if n == "doomed"] == [1, 2, 3]
    assert handler.handled == ["fine"]
    # The dead event's nonce still de-duplicates.
    assert (await post(client, body_of(nonce="doomed")))[0] == 200

    # An operator fixes the cause and requeues: it is handled, from attempt 1 again.
    handler.always_fail.clear()
    assert await spool.requeue_dead_letters(now=receiver.clock.now()) == 1
    assert (await post(client, body_of(nonce="wake-up")))[0] == 202  # wakes the worker
    await eventually(lambda: "doomed" in handler.handled)
    assert [a for n, a, _ in handler.deliveries if n == "doomed"] == [1, 2, 3, 1]
    assert await dead() == 0


async def test_a_failing_event_does_not_hold_up_the_others(
    tmp_path: Path, make_client: ClientFactory
) -> None:
    retry = RetryPolicy(max_attempts=2, backoff_base=200.0, backoff_max=200.0)  # 0.2 s real
    receiver, handler, spool = durable(tmp_path)
    handler.failures["slow"] = 1
    client = await make_client(create_app(receiver, spool=spool, retry=retry))
    assert (await post(client, body_of(nonce="slow")))[0] == 202
    await eventually(lambda: len(handler.deliveries) == 1)
    for i in range(3):
        assert (await post(client, body_of(nonce=f"next-{i}")))[0] == 202
    await eventually(lambda: len(handler.handled) == 4)
    assert handler.handled == ["next-0", "next-1", "next-2", "slow"]


async def test_events_left_at_shutdown_are_delivered_at_the_next_start(
    tmp_path: Path, make_client: ClientFactory
) -> None:
    receiver, _handler, spool = durable(tmp_path)
    started = asyncio.Event()

    @receiver.on("login")
    async def stuck(payload: WebhookPayload, context: WebhookContext) -> None:
        started.set()
        await asyncio.sleep(3600)

    client = await make_client(create_app(receiver, spool=spool, shutdown_grace=0.05))
    assert (await post(client, body_of("login", nonce="stuck")))[0] == 202
    for i in range(3):
        assert (await post(client, body_of(nonce=f"after-{i}")))[0] == 202
    await asyncio.wait_for(started.wait(), 5)
    await client.close()  # the stuck handler is cancelled after the grace period

    receiver2, handler2, spool2 = durable(tmp_path)
    receiver2.add_handler(handler2, "login")
    await make_client(create_app(receiver2, spool=spool2))
    await eventually(lambda: len(handler2.handled) == 4)
    delivered = {n: a for n, a, _ in handler2.deliveries}
    # The interrupted event may have been seen: its attempt says so. The others never were.
    assert delivered == {"stuck": 2, "after-0": 1, "after-1": 1, "after-2": 1}


async def test_concurrent_requests_share_commits(
    tmp_path: Path, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches: list[int] = []
    real = _sqlite._group

    def counting(conn: sqlite3.Connection, batch: list[Any]) -> Any:
        batches.append(len(batch))
        return real(conn, batch)

    monkeypatch.setattr(_sqlite, "_group", counting)
    receiver, handler, spool = durable(tmp_path)
    client = await make_client(create_app(receiver, spool=spool))
    statuses = await asyncio.gather(*(post(client, body_of()) for _ in range(200)))
    assert [s for s, _ in statuses] == [202] * 200
    await eventually(lambda: len(handler.handled) == 200)
    # Fewer commits than requests: concurrent requests shared a commit.
    assert max(batches) > 1
    assert len(batches) < 200


async def test_a_spool_failure_is_503_and_the_nonce_is_released(
    tmp_path: Path, make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    receiver, handler, spool = durable(tmp_path)
    client = await make_client(create_app(receiver, spool=spool))
    real_put = spool.put

    async def broken(**kwargs: Any) -> int | None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(spool, "put", broken)
    status, body = await post(client, body_of(nonce="io"))
    assert (status, body) == (503, {"message": "spool unavailable"})
    monkeypatch.setattr(spool, "put", real_put)
    assert (await post(client, body_of(nonce="io")))[0] == 202
    await eventually(lambda: handler.handled == ["io"])


async def test_synchronous_normal_is_accepted_and_anything_else_refused(tmp_path: Path) -> None:
    async with Spool(tmp_path / "n.sqlite3", synchronous="NORMAL") as spool:
        assert await spool.put(nonce="a", type="x", body=b"{}", headers={}, received_at=1.0) == 1
        assert await spool.put(nonce="a", type="x", body=b"{}", headers={}, received_at=1.0) is None
    with pytest.raises(ValueError, match="synchronous"):
        Spool(tmp_path / "x.sqlite3", synchronous="OFF")  # type: ignore[arg-type]


async def test_a_closed_spool_refuses_work(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "c.sqlite3")
    with pytest.raises(RuntimeError, match="not open"):
        await spool.counts()
    await spool.open()
    await spool.open()  # idempotent
    await spool.close()
    await spool.close()
    assert "closed" in repr(spool)


async def test_settled_nonces_are_forgotten_after_the_retention(tmp_path: Path) -> None:
    async with Spool(tmp_path / "r.sqlite3", retention=10) as spool:

        async def put(at: float) -> int | None:
            return await spool.put(nonce="a", type="x", body=b"{}", headers={}, received_at=at)

        event_id = await put(100)
        assert event_id is not None
        [claimed], _ = await spool.settle_and_claim([], now=100, limit=10)
        assert claimed.attempt == 1
        await spool.settle_and_claim(
            [EventOutcome(event_id, "handled", 100)], now=105, limit=10, prune=True
        )
        assert await put(105) is None  # still remembered within the retention
        await spool.settle_and_claim([], now=111, limit=10, prune=True)
        assert await put(111) is not None  # forgotten: a redelivery now would be new


async def test_claims_number_the_attempts_and_retries_wait_until_due(tmp_path: Path) -> None:
    async with Spool(tmp_path / "a.sqlite3") as spool:
        event_id = await spool.put(nonce="a", type="x", body=b"{}", headers={}, received_at=0)
        assert event_id is not None
        [first], _ = await spool.settle_and_claim([], now=0, limit=10)
        claimed, next_due = await spool.settle_and_claim(
            [EventOutcome(event_id, "retry", 30, "boom")], now=1, limit=10
        )
        assert (claimed, next_due) == ([], 30)
        [second], _ = await spool.settle_and_claim([], now=30, limit=10)
        assert (first.attempt, second.attempt) == (1, 2)
        claimed, _ = await spool.settle_and_claim(
            [EventOutcome(event_id, "unclaimed", 30)], now=30, limit=10
        )
        assert [e.attempt for e in claimed] == [2]  # the unclaimed delivery was taken back


async def test_one_spool_file_serves_one_receiver_at_a_time(tmp_path: Path) -> None:
    first = Spool(tmp_path / "shared.sqlite3")
    second = Spool(tmp_path / "shared.sqlite3")
    await first.open()
    try:
        with pytest.raises(ConfigurationError, match="in use"):
            await second.open()
    finally:
        await first.close()
    await second.open()  # free again
    await second.close()
