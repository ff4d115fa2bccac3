"""The aiohttp app in memory mode: every status path over real HTTP on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from asyncwifi.models._webhook import WebhookPayload
from asyncwifi.webhooks import Receiver, WebhookContext, serve
from asyncwifi.webhooks._app import create_app
from tests.webhooks.helpers import (
    HEADER,
    NOW,
    OLD_SECRET,
    SECRET,
    ClientFactory,
    auth,
    body_of,
    webhook_clock,
)


class Recorder:
    """A receiver whose fallback records what it handles (and can be told to fail)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("clock", webhook_clock())
        self.receiver = Receiver([SECRET, OLD_SECRET], header_name=HEADER, **kwargs)
        self.seen: list[tuple[WebhookPayload, WebhookContext]] = []
        self.fail_next = 0
        self.receiver.fallback(self.handle)

    async def handle(self, payload: WebhookPayload, context: WebhookContext) -> None:
        if self.fail_next:
            self.fail_next -= 1
            raise RuntimeError("handler exploded")
        self.seen.append((payload, context))

    @property
    def nonces(self) -> list[str | None]:
        return [p.nonce for p, _ in self.seen]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder(max_body_size=4096, max_age=3600)


@pytest.fixture
async def client(recorder: Recorder, make_client: ClientFactory) -> Any:
    return await make_client(create_app(recorder.receiver))


async def post(client: Any, body: bytes, headers: dict[str, str], **kw: Any) -> tuple[int, Any]:
    response = await client.post("/webhooks", data=body, headers=headers, **kw)
    assert response.content_type == "application/json"
    return response.status, await response.json()


async def test_a_good_webhook_is_handled_before_the_200(client: Any, recorder: Recorder) -> None:
    status, body = await post(client, body_of("signup", nonce="n-1"), auth(**{"X-Extra": "1"}))
    assert (status, body) == (200, {"status": "handled"})
    [(payload, context)] = recorder.seen
    assert payload.nonce == "n-1"
    assert payload.type == "signup"
    assert context.attempt == 1
    assert context.spool_id is None
    assert context.received_at == NOW
    assert context.body == body_of("signup", nonce="n-1")
    assert context.headers["x-extra"] == "1"
    assert HEADER.lower() not in context.headers


async def test_the_previous_secret_works_during_a_rotation(client: Any, recorder: Recorder) -> None:
    status, _ = await post(client, body_of(), auth(OLD_SECRET))
    assert status == 200
    assert len(recorder.seen) == 1


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({"Content-Type": "application/json"}, f"missing {HEADER} header"),
        ({HEADER: "", "Content-Type": "application/json"}, f"invalid {HEADER} header"),
        ({HEADER: "guess", "Content-Type": "application/json"}, f"invalid {HEADER} header"),
    ],
)
async def test_401_for_a_missing_empty_or_wrong_secret(
    client: Any, recorder: Recorder, headers: dict[str, str], message: str
) -> None:
    assert await post(client, body_of(), headers) == (401, {"message": message})
    assert recorder.seen == []


async def test_415_unless_json(client: Any, recorder: Recorder) -> None:
    status, body = await post(client, body_of(), auth(**{"Content-Type": "text/plain"}))
    assert status == 415
    assert "application/json" in body["message"]
    status, _ = await post(
        client, body_of(), auth(**{"Content-Type": "application/json; charset=utf-8"})
    )
    assert status == 200


async def test_413_for_a_declared_large_body(client: Any, recorder: Recorder) -> None:
    big = body_of(contact={"id": "x" * 5000})
    status, body = await post(client, big, auth())
    assert (status, body) == (413, {"message": "body larger than 4096 bytes"})
    assert recorder.seen == []


async def test_413_for_a_large_chunked_body_without_a_length(
    client: Any, recorder: Recorder
) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(10):
            yield b" " * 1000
        yield body_of()

    status, _ = await post(client, chunks(), auth())  # type: ignore[arg-type]
    assert status == 413
    assert recorder.seen == []


async def test_400_for_malformed_json(client: Any) -> None:
    assert await post(client, b'{"event": {', auth()) == (400, {"message": "malformed JSON body"})


@pytest.mark.parametrize(
    "body",
    [
        # deeper than the interpreter's recursion limit (1,000), within the 4 KB body limit
        b"[" * 1_500 + b"]" * 1_500,
        b'{"type": "signup", "extra": ' + b"[" * 1_500 + b"]" * 1_500 + b"}",
        # the wrong shape at once (a 422 unless the syntax check also fails)
        b'{"type": ' + b"[" * 1_500 + b"]" * 1_500 + b"}",
    ],
    ids=["bare-array", "deep-unknown-field", "deep-wrong-shape"],
)
async def test_400_for_json_nested_too_deeply(
    client: Any, body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    # a RecursionError in the decoder was a 500 with a traceback in the log
    status, answer = await post(client, body, auth())
    assert (status, answer) == (400, {"message": "malformed JSON body: nested too deeply"})
    assert not [r for r in caplog.records if r.exc_info]


async def test_422_for_valid_json_of_the_wrong_shape(client: Any) -> None:
    status, body = await post(client, b'{"event": {"nonce": 7}}', auth())
    assert status == 422
    assert "$.event.nonce" in body["message"]
    assert (await post(client, b"[]", auth()))[0] == 422


async def test_409_for_an_event_older_than_max_age(client: Any, recorder: Recorder) -> None:
    status, body = await post(client, body_of(timestamp=NOW - 3601), auth())
    assert status == 409
    assert "older" in body["message"]
    assert recorder.seen == []


async def test_a_duplicate_is_acknowledged_but_not_processed_again(
    client: Any, recorder: Recorder
) -> None:
    body = body_of(nonce="dup-1")
    assert await post(client, body, auth()) == (200, {"status": "handled"})
    assert await post(client, body, auth()) == (200, {"status": "duplicate"})
    assert recorder.nonces == ["dup-1"]


async def test_events_without_a_nonce_cannot_be_deduplicated(
    client: Any, recorder: Recorder
) -> None:
    body = b'{"event": {"type": "signup", "timestamp": %d}}' % NOW
    for _ in range(2):
        assert (await post(client, body, auth()))[0] == 200
    assert recorder.nonces == [None, None]


async def test_a_failing_handler_is_500_and_its_redelivery_is_processed(
    client: Any, recorder: Recorder
) -> None:
    recorder.fail_next = 1
    body = body_of(nonce="retry-me")
    status, reply = await post(client, body, auth())
    assert status == 500
    assert "handler" in reply["message"]
    assert "exploded" not in reply["message"]
    # The server keeps serving, and the redelivery is not taken for a duplicate.
    assert await post(client, body, auth()) == (200, {"status": "handled"})
    assert recorder.nonces == ["retry-me"]


async def test_a_handler_that_hangs_times_out_with_500(make_client: ClientFactory) -> None:
    r = Receiver(SECRET, header_name=HEADER, handler_timeout=0.05)

    @r.fallback
    async def hang(payload: WebhookPayload, context: WebhookContext) -> None:
        await asyncio.sleep(3600)

    client = await make_client(create_app(r))
    assert (await post(client, body_of(), auth()))[0] == 500


async def test_no_handler_means_ignored(make_client: ClientFactory) -> None:
    r = Receiver(SECRET, header_name=HEADER)
    seen: list[str | None] = []
    r.add_handler(lambda p, c: seen.append(p.type), "login")
    client = await make_client(create_app(r))
    assert await post(client, body_of("signup"), auth()) == (200, {"status": "ignored"})
    assert await post(client, body_of("login"), auth()) == (200, {"status": "handled"})
    assert seen == ["login"]


async def test_other_methods_paths_and_the_health_check(client: Any) -> None:
    response = await client.get("/webhooks")
    assert response.status == 405
    assert response.headers["Allow"] == "POST"
    assert (await response.json())["message"]
    response = await client.post("/elsewhere", data=body_of(), headers=auth())
    assert (response.status, await response.json()) == (404, {"message": "not found"})
    response = await client.get("/healthz")
    assert (response.status, await response.json()) == (200, {"status": "ok", "mode": "memory"})


async def test_a_custom_path_and_header_name(make_client: ClientFactory) -> None:
    r = Receiver("k", header_name="X-Api-Key")
    r.fallback(lambda p, c: None)
    client = await make_client(create_app(r, path="/hooks/wifi", health_path=None))
    response = await client.post(
        "/hooks/wifi",
        data=body_of(),
        headers={"x-api-key": "k", "Content-Type": "application/json"},
    )
    assert response.status == 200
    assert (await client.get("/healthz")).status == 404


async def test_serve_listens_until_cancelled(unused_tcp_port: int) -> None:
    import aiohttp

    r = Receiver(SECRET, header_name=HEADER)
    seen: list[str | None] = []
    r.fallback(lambda p, c: seen.append(p.nonce))
    ready: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serve(r, port=0, on_ready=ready.set_result))
    port = await asyncio.wait_for(ready, 5)
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"http://127.0.0.1:{port}/webhooks", data=body_of(nonce="s-1"), headers=auth()
        ) as response,
    ):
        assert response.status == 200
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["s-1"]


def test_create_app_refuses_a_relative_path() -> None:
    with pytest.raises(ValueError, match="path"):
        create_app(Receiver(SECRET), path="webhooks")


def test_the_app_is_an_aiohttp_application() -> None:
    assert isinstance(create_app(Receiver(SECRET)), web.Application)
