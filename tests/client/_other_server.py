"""A server that is legal but not ours: the simulator behind a proxy that answers the way
another implementation of the reference plausibly would (imported by tests, not a conftest).

The proxy forwards every request to a running :class:`~asyncwifi.testing.Simulator` over
real HTTP and changes what a test asks for on the way: the JSON of a response
(``rewrite(path, body) -> body``), the status of a response (``status(path, status, headers)
-> status``), or the scroll's continuation (``continuation="ignore"``: the scroll
parameter is dropped, as by a server that does not know it; ``"replay"``: a continuation is
answered with the body of the page it continues, the same scroll id and records), or the
whole answer (``answer(path) -> web.Response | None``: a proxy's own page instead of the
API's).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import aiohttp
import msgspec
from aiohttp import web

from asyncwifi.testing import Simulator

__all__ = ["OtherServer", "SilentServer", "floats_for_ints"]

#: the scroll parameter of each scroll path's continuation (spec §4.2, §4.5)
SCROLL_PARAMS = ("sId", "scrollId")
_HOP = {"content-length", "content-encoding", "transfer-encoding", "connection"}


def floats_for_ints(value: Any) -> Any:
    """``value`` with every integer written as a float (``25`` -> ``25.0``): a server whose
    JSON writer keeps numbers as doubles, which spec §2 ("number") allows."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, list):
        return [floats_for_ints(v) for v in value]
    if isinstance(value, dict):
        return {k: floats_for_ints(v) for k, v in value.items()}
    return value


class OtherServer:
    """``async with OtherServer(sim, ...) as other:`` serves on ``other.base_url``."""

    def __init__(
        self,
        sim: Simulator,
        *,
        rewrite: Callable[[str, Any], Any] | None = None,
        status: Callable[[str, int, dict[str, str]], int] | None = None,
        continuation: str | None = None,
        answer: Callable[[str], web.Response | None] | None = None,
    ) -> None:
        self.sim = sim
        self.answer = answer
        self.rewrite = rewrite
        self.status = status
        self.continuation = continuation
        #: every request the proxy received: (method, path, query)
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self._pages: dict[str, bytes] = {}
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> OtherServer:
        self._session = aiohttp.ClientSession(auto_decompress=True)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    def count(self, path_part: str) -> int:
        """Requests received whose path contains ``path_part``."""
        return sum(path_part in path for _m, path, _q in self.requests)

    async def _handle(self, request: web.Request) -> web.Response:
        assert self._session is not None
        query = dict(request.query)
        self.requests.append((request.method, request.path, query))
        own = self.answer(request.path) if self.answer is not None else None
        if own is not None:
            return own
        scroll = next((p for p in SCROLL_PARAMS if p in query), None)
        if scroll is not None and self.continuation == "replay" and query[scroll] in self._pages:
            body, code, headers = (
                self._pages[query[scroll]],
                200,
                {"Content-Type": "application/json"},
            )
            return web.Response(body=body, status=code, headers=headers)
        if scroll is not None and self.continuation == "ignore":
            del query[scroll]
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host",)}
        async with self._session.request(
            request.method,
            self.sim.base_url + request.path,
            params=query,
            data=await request.read(),
            headers=headers,
        ) as upstream:
            body = await upstream.read()
            code = upstream.status
            out = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP}
        if self.rewrite is not None and body and code < 400:
            body = msgspec.json.encode(self.rewrite(request.path, msgspec.json.decode(body)))
        if self.status is not None:
            code = self.status(request.path, code, out)
        if self.continuation == "replay" and code == 200:
            sid = _scroll_id(body)
            if sid is not None:
                self._pages.setdefault(sid, body)
        return web.Response(body=body, status=code, headers=out)


def _scroll_id(body: bytes) -> str | None:
    try:
        data = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return None
    if not isinstance(data, dict):
        return None
    sid = data.get("sId") or data.get("scrollId")
    return sid if isinstance(sid, str) else None


class SilentServer:
    """A host that takes every connection and never answers (a base URL pointing at the
    wrong service, a firewall that swallows requests): ``accepted`` counts connections."""

    def __init__(self) -> None:
        self.accepted = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> SilentServer:
        self._server = await asyncio.start_server(self._hold, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _hold(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        await reader.read()  # the request, then nothing, until the client gives up
        writer.close()
