"""The exception tree of asyncwifi.

Every error the SDK raises derives from :class:`AsyncWifiError`; foreign exceptions
(aiohttp, msgspec, redis) are translated once, at the boundary, with ``raise ... from exc``.
No exception ever carries the client secret or an access token::

    AsyncWifiError
    ├── ValidationError          bad argument, raised before any request is spent
    ├── ConfigurationError       missing credentials, plain http without allow_http, ...
    │   │                        (also a ValueError)
    │   └── SchemaVersionError   a spool or state file written by a newer asyncwifi
    ├── ClientStateError         used before opening or after closing (also a RuntimeError)
    ├── DecodeError              a response body that does not match its model
    ├── TransportError           network failure (connection, timeout, TLS), wraps aiohttp
    ├── QuotaExhaustedError      the day (or an object) quota is spent; carries reset_at
    ├── ScrollExpiredError       a scroll session lapsed; says how many were delivered
    ├── AmbiguousWriteError      a write whose outcome could not be established
    └── ApiError                 the server answered with an error status
        ├── UnauthorizedError    401: invalid client key or secret (or a token refused
        │                        even after a new login)
        ├── ForbiddenError       403: not authorised, or token invalid/expired
        ├── NotFoundError        404
        ├── ConflictError        409: semantic errors or invalid parameters
        ├── GoneError            410: endpoint revoked or removed
        ├── RateLimitedError     429: carries the rate-limit state and reset time
        └── ServerError          5xx
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "AmbiguousWriteError",
    "ApiError",
    "AsyncWifiError",
    "ClientStateError",
    "ConfigurationError",
    "ConflictError",
    "DecodeError",
    "ForbiddenError",
    "GoneError",
    "NotFoundError",
    "QuotaExhaustedError",
    "RateLimitedError",
    "SchemaVersionError",
    "ScrollExpiredError",
    "ServerError",
    "TransportError",
    "UnauthorizedError",
    "ValidationError",
]


class AsyncWifiError(Exception):
    """Root of every exception raised by asyncwifi."""


class ValidationError(AsyncWifiError, ValueError):
    """An argument is invalid; raised before any request (or quota) is spent."""


class ConfigurationError(AsyncWifiError, ValueError):
    """A setting is missing or invalid (credentials, base URL, a policy's bounds).

    Also a ``ValueError``, so that code written when these were plain ``ValueError``s
    still catches them.
    """


class SchemaVersionError(ConfigurationError):
    """A local file (the webhook spool, a job's state) was written by a newer asyncwifi.

    ``found`` is the file's schema version, ``supported`` the newest this one reads; the
    file is left untouched: upgrade asyncwifi, or point at another file.
    """

    def __init__(self, what: str, *, found: int, supported: int) -> None:
        super().__init__(
            f"{what} has schema version {found}, newer than this asyncwifi reads "
            f"({supported}): it was written by a newer release; upgrade asyncwifi or use "
            "another file"
        )
        self.what = what
        self.found = found
        self.supported = supported


class ClientStateError(AsyncWifiError, RuntimeError):
    """An object (the client, a spool) was used in a state that does not allow it (not
    opened, or closed). Also a ``RuntimeError``, which it was before."""


class DecodeError(AsyncWifiError):
    """A response body could not be decoded into its model.

    ``path`` is the JSON path of the offending value (``$.customers[3].age``) when known,
    ``raw`` the bytes that failed (a bounded excerpt for whole bodies), ``content_type``
    the declared media type of an answer that is not JSON at all.
    """

    def __init__(self, message: str, *, path: str | None = None, raw: bytes | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.raw = raw
        #: set by the client when the body was not even JSON (cut in transit): worth a retry
        self.retryable = False
        #: the media type the server declared for a body that is not JSON (``text/html``:
        #: a proxy's page, a wrong base URL), else None
        self.content_type: str | None = None


class TransportError(AsyncWifiError):
    """The request did not produce a complete HTTP response (connection, timeout, TLS).

    ``kind`` says what failed: ``"connect"`` (nothing was sent: safe to retry any method),
    ``"timeout"``, ``"disconnected"`` or ``"payload"`` (the request may have been executed:
    a write must be checked before it is retried), ``"tls"``.
    """

    def __init__(
        self,
        message: str,
        *,
        method: str = "",
        path: str = "",
        kind: str = "disconnected",
        unreachable: bool = False,
    ) -> None:
        super().__init__(f"{method} {path}: {message}" if method else message)
        self.message = message
        self.method = method
        self.path = path
        self.kind = kind
        #: nothing listens at the address: its host name does not resolve, or the host
        #: refused the connection (a ``"connect"`` failure); at a client's first request
        #: that is a wrong base URL, not an outage (see ``Client``)
        self.unreachable = unreachable

    @property
    def request_may_have_been_executed(self) -> bool:
        """False only when the request certainly never reached the server."""
        return self.kind not in ("connect", "tls")


class QuotaExhaustedError(AsyncWifiError):
    """A quota (the day's, or an object's) is spent; nothing was sent.

    ``reset_at`` is the epoch time (seconds, UTC) at which the quota is expected back.
    """

    def __init__(self, message: str, *, reset_at: float, limit: str = "day") -> None:
        super().__init__(message)
        self.message = message
        self.reset_at = reset_at
        self.limit = limit


class ScrollExpiredError(AsyncWifiError):
    """A scroll session lapsed before the end; ``delivered`` of ``total`` were handed out."""

    def __init__(self, message: str, *, delivered: int, total: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.delivered = delivered
        self.total = total


class AmbiguousWriteError(AsyncWifiError):
    """A write (POST, PUT, DELETE) may or may not have taken effect and it could not be checked."""

    def __init__(self, message: str, *, method: str, path: str) -> None:
        super().__init__(f"{method} {path}: {message}")
        self.message = message
        self.method = method
        self.path = path


class ApiError(AsyncWifiError):
    """The server answered with an error status.

    Carries ``status``, the server's ``message``, the request's ``method`` and ``path``
    (never a query string with secrets, never the token) and the gateway's ``request_id``.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        method: str = "",
        path: str = "",
        request_id: str | None = None,
        body: bytes | None = None,
    ) -> None:
        self.message = message
        self.status = status
        self.method = method
        self.path = path
        self.request_id = request_id
        #: a bounded excerpt of the response body, for diagnosis
        self.body = body[:2048] if body else body
        where = f" ({method} {path})" if method else ""
        rid = f" [request id {request_id}]" if request_id else ""
        super().__init__(f"{status} {message}{where}{rid}")


class UnauthorizedError(ApiError):
    """401: invalid client key or secret (spec §7). A 401 to a request that carried a token
    (some gateways send it for a revoked token, where the reference says 403) is raised only
    once a new login did not cure it."""


class ForbiddenError(ApiError):
    """403: the service is not authorised for the resource, or the token is invalid (spec §7)."""


class NotFoundError(ApiError):
    """404: the resource does not exist."""


class ConflictError(ApiError):
    """409: semantic errors or invalid parameters in the request."""


class GoneError(ApiError):
    """410: the endpoint has been revoked or removed (spec §9)."""


class RateLimitedError(ApiError):
    """429: a rate limit was exceeded.

    ``retry_after`` is the server's wait in seconds (``Retry-After`` or ``RateLimit-Reset``),
    ``reset_at`` the epoch time it points to, ``rate_limit`` the parsed limit headers and
    ``bodyless`` whether the 429 had no body: after a write, the gateway sends such a 429
    when an object limit was spent and the write *was executed*
    (docs/reference/gateway.md).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int = 429,
        method: str = "",
        path: str = "",
        request_id: str | None = None,
        body: bytes | None = None,
        retry_after: float | None = None,
        reset_at: float | None = None,
        rate_limit: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            message, status=status, method=method, path=path, request_id=request_id, body=body
        )
        self.retry_after = retry_after
        self.reset_at = reset_at
        self.rate_limit = dict(rate_limit or {})
        self.bodyless = not body


class ServerError(ApiError):
    """5xx: an uncaught application error or a gateway failure."""


_BY_STATUS: dict[int, type[ApiError]] = {
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    429: RateLimitedError,
}


def error_for_status(status: int) -> type[ApiError]:
    """The exception class for an HTTP error status (5xx -> ServerError, others -> ApiError)."""
    if status >= 500:
        return ServerError
    return _BY_STATUS.get(status, ApiError)
