"""The one I/O seam: a ``Transport`` sends a ``Request`` and returns a ``Response``.

Only this module imports aiohttp's client. Foreign exceptions are translated here, once,
into :class:`~asyncwifi.errors.TransportError` (``raise ... from exc``), with ``kind`` saying
whether the request could have reached the server. :class:`MockTransport` is public so that
users can test their own code without a network.
"""

from __future__ import annotations

import errno
import inspect
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import aiohttp
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from asyncwifi._auth import redact_url
from asyncwifi._defaults import CONNECT_TIMEOUT, TIMEOUT
from asyncwifi._version import __version__
from asyncwifi.errors import ConfigurationError, TransportError

__all__ = [
    "AiohttpTransport",
    "BodyBuffer",
    "MockTransport",
    "Request",
    "Response",
    "Transport",
]

USER_AGENT = f"asyncwifi/{__version__}"


class BodyBuffer:
    """A receive buffer reused from one response to the next (a scroll's pages).

    A multi-megabyte body read into fresh memory costs the allocator a heap grown and
    trimmed again for every page (page faults, about a tenth of a stream's CPU); read into
    one buffer that stays, it costs a copy. A body read into it is a ``memoryview`` that
    is valid until the next response is read into the same buffer, so only a caller that
    decodes the body at once, into objects that copy what they keep, may pass one. The
    buffer is never resized in place (a live view would forbid it): a bigger body gets a
    new buffer, which is kept from then on.
    """

    __slots__ = ("data",)

    def __init__(self, size: int = 0) -> None:
        self.data = bytearray(size)

    def reserve(self, size: int, keep: int = 0) -> bytearray:
        """A buffer of at least ``size`` bytes whose first ``keep`` bytes are the current
        one's: the current buffer when it is big enough, else a new one, kept."""
        data = self.data
        if size > len(data):
            bigger = bytearray(max(size, 2 * len(data)))
            bigger[:keep] = memoryview(data)[:keep]
            self.data = data = bigger
        return data

    def __repr__(self) -> str:
        return f"BodyBuffer({len(self.data)} bytes)"


def request_id_of(headers: Mapping[str, str]) -> str | None:
    """The gateway's id of a request, for support (``X-Kong-Request-Id``, else the common
    ``X-Request-Id``): the one reader of it."""
    return headers.get("X-Kong-Request-Id") or headers.get("X-Request-Id")


@dataclass(frozen=True, slots=True)
class Request:
    """One HTTP request, before authentication: ``path`` is already percent-encoded.

    ``into``: a :class:`BodyBuffer` the transport may read a 200 response's body into (the
    body is then a ``memoryview`` of it); a transport is free to ignore it.
    """

    method: str
    path: str
    params: Mapping[str, str] | None = None
    body: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    into: BodyBuffer | None = None
    #: seconds to its last byte, instead of the transport's own (``with_options(timeout=)``)
    timeout: float | None = None

    def __repr__(self) -> str:
        # headers may hold the bearer token: never shown
        return f"Request({self.method} {self.path}, params={dict(self.params or {})!r})"


@dataclass(slots=True)
class Response:
    """A complete HTTP response: status, case-insensitive headers, the whole body.

    ``headers`` may be given as any mapping (a fake transport's ``{"Retry-After": "3"}``):
    they are kept case-insensitive. ``body`` is ``bytes``, or a ``memoryview`` of the
    request's :class:`BodyBuffer` when the request passed one and the status is 200.
    """

    status: int
    headers: Mapping[str, str]
    body: bytes | memoryview
    #: seconds between sending and the last byte of the body
    elapsed: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.headers, CIMultiDictProxy):
            self.headers = make_headers(self.headers)

    @property
    def request_id(self) -> str | None:
        """The gateway's request id (:func:`request_id_of`), kept on errors for support."""
        return request_id_of(self.headers)

    def __repr__(self) -> str:
        return f"Response(status={self.status}, bytes={len(self.body)})"


def make_headers(items: Mapping[str, str] | None = None) -> CIMultiDictProxy[str]:
    """Case-insensitive read-only headers."""
    return CIMultiDictProxy(CIMultiDict(items or {}))


class Transport(Protocol):
    """What the client needs of the network: send one request, close."""

    async def send(self, request: Request) -> Response:
        """Send ``request`` and return the complete response, or raise TransportError."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


class AiohttpTransport:
    """The production transport: one ``aiohttp.ClientSession`` with a bounded keep-alive pool.

    TLS certificates are verified (the default ``ssl`` context); ``Accept: application/json``
    is sent so that the gateway answers its 429 in JSON (docs/reference/gateway.md), and
    compressed bodies are accepted and decompressed.
    """

    __slots__ = ("_base", "_connector_limit", "_session", "_ssl", "_timeout")

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = TIMEOUT,
        connect_timeout: float = CONNECT_TIMEOUT,
        max_connections: int = 32,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._base = URL(base_url.rstrip("/"))
        if not self._base.scheme or not self._base.host:
            shown = redact_url(base_url)
            raise ConfigurationError(f"base_url must be an absolute URL, got {shown!r}")
        self._timeout = aiohttp.ClientTimeout(
            total=timeout, connect=connect_timeout, sock_connect=connect_timeout
        )
        self._connector_limit = max_connections
        self._ssl: ssl.SSLContext | bool = ssl_context if ssl_context is not None else True
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            limit=self._connector_limit, ssl=self._ssl, enable_cleanup_closed=False
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=self._timeout,
            headers={
                "Accept": "application/json",
                "Accept-Encoding": "gzip, deflate",
                "User-Agent": USER_AGENT,
            },
            raise_for_status=False,
            auto_decompress=True,
        )
        # aiohttp sends an idempotent request lost on a reused keep-alive connection once
        # more by itself: a request the scheduler never admitted (spec §8: and its objects
        # counted twice by the server). The pipeline's retry is the one rule; aiohttp has
        # no public switch for its own, so its attribute is turned off where it exists.
        if hasattr(self._session, "_retry_connection"):
            self._session._retry_connection = False
        return self._session

    def url(self, path: str) -> URL:
        """The absolute URL of an already-encoded ``path`` (never re-normalised)."""
        return URL(str(self._base) + path, encoded=True)

    async def send(self, request: Request) -> Response:
        session = self._session or self._open()
        url = self.url(request.path)
        if request.params:
            url = url.update_query(request.params)
        started = time.perf_counter()
        try:
            timeout = self._timeout
            if request.timeout is not None:
                timeout = aiohttp.ClientTimeout(
                    total=request.timeout,
                    connect=min(request.timeout, timeout.connect or request.timeout),
                    sock_connect=min(request.timeout, timeout.sock_connect or request.timeout),
                )
            async with session.request(
                request.method, url, data=request.body, headers=dict(request.headers),
                timeout=timeout,
            ) as resp:  # fmt: skip
                body: bytes | memoryview
                if request.into is not None and resp.status == 200:
                    body = await _read_into(resp, request.into)
                else:
                    body = await resp.read()
                return Response(
                    status=resp.status,
                    headers=resp.headers,
                    body=body,
                    elapsed=time.perf_counter() - started,
                )
        except (TimeoutError, aiohttp.ClientError, ssl.SSLError) as exc:
            kind, message = _classify(exc)
            raise TransportError(
                message,
                method=request.method,
                path=request.path,
                kind=kind,
                unreachable=_unreachable(exc),
            ) from exc

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    def __repr__(self) -> str:
        return f"AiohttpTransport({str(self._base)!r})"


#: aiohttp's failures, most specific first: (exception types, kind, message)
_FAILURES: tuple[tuple[tuple[type[BaseException], ...], str, str], ...] = (
    ((aiohttp.ClientSSLError, ssl.SSLError), "tls", "TLS failure"),
    ((aiohttp.ConnectionTimeoutError,), "connect", "connect timeout"),
    ((aiohttp.ClientConnectorError,), "connect", "cannot connect"),
    ((TimeoutError,), "timeout", "timed out waiting for the response"),
    ((aiohttp.ClientPayloadError,), "payload", "response body incomplete"),
    ((aiohttp.ClientError,), "disconnected", "connection lost"),
)


def _unreachable(exc: BaseException) -> bool:
    """Whether nothing listens at the address: the host name does not resolve, or the host
    refused the connection (a timeout is not this: a network may be slow or filtered)."""
    if isinstance(exc, aiohttp.ClientConnectorError) and not isinstance(
        exc, aiohttp.ConnectionTimeoutError | aiohttp.ClientSSLError
    ):
        cause = exc.os_error
        return isinstance(cause, socket.gaierror | ConnectionRefusedError) or (
            getattr(cause, "errno", None) == errno.ECONNREFUSED
        )
    return False


def _classify(exc: BaseException) -> tuple[str, str]:
    """The ``kind`` of a transport failure (whether the request may have been executed)
    and a message naming the exception type, never its text (it may hold a URL)."""
    if _unreachable(exc):
        cause = exc.os_error if isinstance(exc, aiohttp.ClientConnectorError) else None
        what = "host name not found" if isinstance(cause, socket.gaierror) else "refused"
        return "connect", f"cannot connect: {what} ({type(exc).__name__})"
    for types, kind, message in _FAILURES:
        if isinstance(exc, types):
            return kind, f"{message} ({type(exc).__name__})"
    return "disconnected", type(exc).__name__


Handler = Callable[[Request], "Response | Awaitable[Response]"]


async def _read_into(resp: aiohttp.ClientResponse, sink: BodyBuffer) -> memoryview:
    """Read the body into ``sink`` chunk by chunk, as it arrives (one copy, no join)."""
    buf = sink.reserve(resp.content_length or 0)
    pos = 0
    async for chunk in resp.content.iter_any():
        end = pos + len(chunk)
        if end > len(buf):
            buf = sink.reserve(end, keep=pos)
        buf[pos:end] = chunk
        pos = end
    return memoryview(buf)[:pos]


class MockTransport:
    """A transport that calls ``handler(request)`` instead of the network (for users' tests).

    The handler may be sync or async and returns a :class:`Response` (its headers any mapping)
    or raises :class:`~asyncwifi.errors.TransportError` to fake a network failure.
    ``requests`` records every request sent, in order.
    """

    __slots__ = ("handler", "requests")

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        #: every request this transport was asked to send
        self.requests: list[Request] = []

    async def send(self, request: Request) -> Response:
        self.requests.append(request)
        result = self.handler(request)
        if inspect.isawaitable(result):
            result = await result
        assert isinstance(result, Response)
        return result

    async def aclose(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"MockTransport(requests={len(self.requests)})"
