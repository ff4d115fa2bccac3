"""A transport that records every bearer token it sent or received, so that tests can look
for them where they must never appear (logs, reprs, exceptions, telemetry)."""

from __future__ import annotations

import msgspec

from asyncwifi._transport import AiohttpTransport, Request, Response

LOGIN = "/v1/sts/login/services"


class Recording:
    """Wraps a real transport; ``tokens`` holds every bearer token seen on the wire."""

    def __init__(self, inner: AiohttpTransport) -> None:
        self.inner = inner
        self.tokens: set[str] = set()

    async def send(self, request: Request) -> Response:
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            self.tokens.add(auth[7:])
        response = await self.inner.send(request)
        if request.path == LOGIN and response.status == 200:
            self.tokens.add(msgspec.json.decode(response.body)["token"])
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()
