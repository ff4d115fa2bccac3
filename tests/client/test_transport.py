"""The aiohttp transport over real HTTP: bodies read into a reused BodyBuffer."""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec
import pytest
from aiohttp import web

from asyncwifi import Request
from asyncwifi._transport import AiohttpTransport, BodyBuffer

PAGE = msgspec.json.encode({"events": [{"id": f"e{i}", "type": "login"} for i in range(2_000)]})


@pytest.fixture
async def server() -> AsyncIterator[str]:
    """A server with a fixed-length body, a chunked one and a JSON 409."""

    async def fixed(_: web.Request) -> web.Response:
        return web.Response(body=PAGE, content_type="application/json")

    async def chunked(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        for start in range(0, len(PAGE), 7_001):
            await response.write(PAGE[start : start + 7_001])
        await response.write_eof()
        return response

    async def conflict(_: web.Request) -> web.Response:
        return web.json_response({"message": "invalid"}, status=409)

    app = web.Application()
    app.router.add_get("/fixed", fixed)
    app.router.add_get("/chunked", chunked)
    app.router.add_get("/conflict", conflict)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def test_reserve_never_resizes_a_buffer_in_place() -> None:
    sink = BodyBuffer(4)
    first = sink.reserve(3)
    first[:3] = b"abc"
    view = memoryview(first)[:3]  # a live view forbids resizing: a new buffer is made
    bigger = sink.reserve(10, keep=3)
    assert bigger is not first
    assert sink.data is bigger
    assert len(bigger) >= 10
    assert bytes(bigger[:3]) == b"abc"
    assert bytes(view) == b"abc"
    assert sink.reserve(5) is bigger  # big enough: reused
    assert repr(sink) == f"BodyBuffer({len(bigger)} bytes)"


@pytest.mark.parametrize("path", ["/fixed", "/chunked"])
async def test_a_body_read_into_a_buffer_is_the_exact_body(server: str, path: str) -> None:
    transport = AiohttpTransport(server)
    sink = BodyBuffer(100)  # too small: grown, whether the length is announced or not
    try:
        response = await transport.send(Request("GET", path, into=sink))
        assert response.status == 200
        assert isinstance(response.body, memoryview)
        assert bytes(response.body) == PAGE
        grown = sink.data
        again = await transport.send(Request("GET", path, into=sink))
        assert bytes(again.body) == PAGE
        assert sink.data is grown  # the second body reused the buffer
        plain = await transport.send(Request("GET", path))
        assert isinstance(plain.body, bytes)
        assert plain.body == PAGE
    finally:
        await transport.aclose()


async def test_an_error_body_is_never_read_into_the_buffer(server: str) -> None:
    transport = AiohttpTransport(server)
    sink = BodyBuffer(64)
    try:
        response = await transport.send(Request("GET", "/conflict", into=sink))
        assert response.status == 409
        assert isinstance(response.body, bytes)
        assert msgspec.json.decode(response.body) == {"message": "invalid"}
        assert bytes(sink.data) == bytes(64)  # untouched
    finally:
        await transport.aclose()
