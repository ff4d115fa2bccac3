"""The receiver: request checks (sans-I/O) and the router of event types to handlers.

Nothing here touches a socket. :meth:`Receiver.check` takes the request's headers and body
and the current time and answers with a typed payload or a :class:`Rejection` (status and
message); the aiohttp app (``_app.py``) and the spool worker only move bytes around it.

Order of the checks, and why: authentication first (a stranger learns nothing else, not even
the size limit), then content type (415), declared size (413), JSON syntax (400), shape
(422), and last the optional age limit (409).

spec §8: objects exchanged through webhooks count toward the subscription's volume like the
API's. Given a store (``objects``, a :class:`~asyncwifi.ratelimit.RateStore`), the receiver
counts each delivery it accepted, once, as an object of kind ``"webhooks"``
(:meth:`Receiver.count_delivery`, called by the app): with the ``RedisStore`` of the API
key's clients, their schedulers' ``objects()`` see the deliveries beside their own reads.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import msgspec

from asyncwifi._clock import Clock, SystemClock
from asyncwifi._protocol import require_positive
from asyncwifi.errors import ConfigurationError
from asyncwifi.models import WebhookPayload
from asyncwifi.ratelimit import WEBHOOKS, RateStore
from asyncwifi.webhooks._dedup import Deduplicator, MemoryDeduplicator

__all__ = [
    "DEFAULT_HEADER_NAME",
    "Handler",
    "Receiver",
    "Rejection",
    "WebhookContext",
]

#: The header that carries the shared secret unless told otherwise (spec §6.2: the platform
#: only offers custom headers configured on the webhook, so the name is the user's choice).
DEFAULT_HEADER_NAME: Final = "X-Webhook-Secret"

_log = logging.getLogger("asyncwifi.webhooks")
_DECODER: Final = msgspec.json.Decoder(WebhookPayload)
_ANY_DECODER: Final = msgspec.json.Decoder()
_ERROR_ENCODER: Final = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class Rejection:
    """A request refused: the HTTP ``status`` and a ``message`` safe to send back."""

    status: int
    message: str

    def body(self) -> bytes:
        """The JSON error body ``{"message": ...}``."""
        return _ERROR_ENCODER.encode({"message": self.message})


@dataclass(frozen=True, slots=True)
class WebhookContext:
    """What a handler gets besides the typed payload: the raw request and delivery facts.

    ``attempt`` is 1 on the first delivery to the handlers. In durable mode a value above 1
    means the event may have been seen before (an earlier attempt raised, or the process
    stopped while handling it): a handler that must act exactly once checks its own records
    for ``nonce`` (or ``spool_id``) only then.
    """

    #: the request body exactly as received
    body: bytes
    #: the request headers, names lower-cased, the secret header removed
    headers: Mapping[str, str] = field(default_factory=dict)
    #: when the request was accepted, epoch seconds on the receiver's clock
    received_at: float = 0.0
    #: 1 for the first delivery to the handlers, 2 and more for retries and redeliveries
    attempt: int = 1
    #: the event's row in the durable spool (``None`` in memory mode)
    spool_id: int | None = None


_TOO_DEEP: Final = Rejection(400, "malformed JSON body: nested too deeply")

#: A handler: ``handler(payload, context)``, plain or ``async``; its return value is ignored.
Handler = Callable[[WebhookPayload, WebhookContext], Awaitable[Any] | None]
_H = TypeVar("_H", bound=Handler)


def _digest(value: bytes) -> bytes:
    # Comparing fixed-length digests keeps the secret's length out of the timing, too.
    return hashlib.sha256(value).digest()


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """``headers[name]`` case-insensitively (aiohttp's headers are; a plain dict may not be)."""
    value = headers.get(name)
    if value is not None:
        return value
    lowered = name.lower()
    for key, candidate in headers.items():
        if key.lower() == lowered:
            return candidate
    return None


class Receiver:
    """Authenticates, validates and routes webhook calls (spec §6.2); no I/O of its own.

    ``secrets`` is one shared secret or several (during a rotation every listed value is
    accepted); an empty secret is refused. ``max_age`` (seconds), when set, refuses events
    whose ``event.timestamp`` is older (409); keep it at most the de-duplication TTL so that
    a redelivery the de-duplicator has forgotten is refused rather than handled twice.
    ``objects``, when given, is the store each accepted delivery is counted in (spec §8, on
    ``clock``); the receiver uses it until :meth:`aclose`.
    """

    __slots__ = (
        "_digests",
        "_fallback",
        "_header_lower",
        "_routes",
        "clock",
        "dedup",
        "handler_timeout",
        "header_name",
        "max_age",
        "max_body_size",
        "objects",
    )

    def __init__(
        self,
        secrets: str | Iterable[str],
        *,
        header_name: str = DEFAULT_HEADER_NAME,
        max_body_size: int = 1_048_576,
        dedup: Deduplicator | None = None,
        max_age: float | None = None,
        handler_timeout: float | None = 30.0,
        clock: Clock | None = None,
        objects: RateStore | None = None,
    ) -> None:
        values = [secrets] if isinstance(secrets, str) else list(secrets)
        if not values:
            raise ConfigurationError("a webhook receiver needs at least one secret")
        if any(not isinstance(v, str) or not v for v in values):
            raise ConfigurationError("webhook secrets must be non-empty strings")
        if not header_name or not header_name.isascii() or ":" in header_name:
            raise ConfigurationError("header_name must be a non-empty ASCII header name")
        require_positive(max_body_size, "max_body_size", integer=True, error=ConfigurationError)
        if max_age is not None:
            require_positive(max_age, "max_age (or None for no limit)", error=ConfigurationError)
        if objects is not None and not isinstance(objects, RateStore):
            raise ConfigurationError(
                f"objects must be a RateStore (a scheduler's is its .store), not {objects!r}"
            )
        self._digests: tuple[bytes, ...] = tuple(_digest(v.encode()) for v in values)
        #: the header carrying the shared secret
        self.header_name = header_name
        self._header_lower = header_name.lower()
        #: the largest body accepted, in bytes (413 above)
        self.max_body_size = max_body_size
        #: nonce de-duplication (in memory unless told otherwise)
        self.dedup: Deduplicator = dedup if dedup is not None else MemoryDeduplicator()
        #: refuse events older than this many seconds (``None``: no limit)
        self.max_age = max_age
        #: seconds a handler may run before it counts as failed (``None``: no limit)
        self.handler_timeout = handler_timeout
        #: where "now" comes from (age checks, de-duplication, retry schedule, counts)
        self.clock: Clock = clock if clock is not None else SystemClock()
        #: where accepted deliveries are counted as objects (spec §8), or None
        self.objects = objects
        if objects is not None:
            objects.attach()
        self._routes: dict[str | None, Handler] = {}
        self._fallback: Handler | None = None

    def __repr__(self) -> str:
        # Never the secrets: only how many there are.
        return (
            f"Receiver(header_name={self.header_name!r}, secrets={len(self._digests)}, "
            f"routes={sorted(k for k in self._routes if k is not None)!r}, "
            f"fallback={self._fallback is not None})"
        )

    # -- routing ----------------------------------------------------------------------------

    def on(self, *event_types: str) -> Callable[[_H], _H]:
        """Decorator: route the given ``event.type`` values to the decorated handler."""
        if not event_types:
            raise ConfigurationError("on() needs at least one event type")

        def register(handler: _H) -> _H:
            self.add_handler(handler, *event_types)
            return handler

        return register

    def add_handler(self, handler: Handler, *event_types: str) -> None:
        """Route ``event_types`` to ``handler`` (one handler per type; a second is an error)."""
        if not callable(handler):
            raise ConfigurationError(f"handler {handler!r} is not callable")
        for event_type in event_types:
            if not isinstance(event_type, str) or not event_type:
                raise ConfigurationError(f"invalid event type {event_type!r}")
            if event_type in self._routes:
                raise ConfigurationError(f"event type {event_type!r} already has a handler")
        for event_type in event_types:
            self._routes[event_type] = handler

    def fallback(self, handler: _H) -> _H:
        """Decorator: the handler for every type no :meth:`on` route names (and no type)."""
        if not callable(handler):
            raise ConfigurationError(f"handler {handler!r} is not callable")
        if self._fallback is not None:
            raise ConfigurationError("the receiver already has a fallback handler")
        self._fallback = handler
        return handler

    def handler_for(self, event_type: str | None) -> Handler | None:
        """The handler an event of this type goes to, or ``None`` (it is then ignored)."""
        return self._routes.get(event_type, self._fallback)

    async def dispatch(self, payload: WebhookPayload, context: WebhookContext) -> bool:
        """Call the handler for ``payload``; ``False`` if none applies. Handler errors propagate.

        An ``async`` handler runs under :attr:`handler_timeout` (``TimeoutError`` after it);
        a plain one runs to completion on the event loop's thread, so it must be quick.
        """
        handler = self._routes.get(payload.type, self._fallback)
        if handler is None:
            return False
        result = handler(payload, context)
        if inspect.isawaitable(result):
            if self.handler_timeout is None:
                await result
            else:
                async with asyncio.timeout(self.clock.real(self.handler_timeout)):
                    await result
        return True

    async def count_delivery(self) -> None:
        """Count one accepted delivery as an object of kind ``"webhooks"`` in :attr:`objects`
        (spec §8), now. The delivery is accepted already: a store that fails is logged,
        never raised."""
        if self.objects is None:
            return
        try:
            await self.objects.add_objects(self.clock.now(), WEBHOOKS, 1)
        except Exception:
            _log.exception("could not count a webhook delivery in the object store")

    # -- checks (sans-I/O) ------------------------------------------------------------------

    def authenticate(self, headers: Mapping[str, str]) -> Rejection | None:
        """401 unless the secret header holds one of the secrets (constant-time comparison).

        Every candidate is compared, matched or not, so the time taken says nothing about
        which secret (or how much of one) matched.
        """
        presented = _header(headers, self.header_name)
        raw = presented.encode("utf-8", "surrogateescape") if presented is not None else b""
        offered = _digest(raw)
        matched = False
        for candidate in self._digests:
            matched |= hmac.compare_digest(offered, candidate)
        if presented is None:
            return Rejection(401, f"missing {self.header_name} header")
        if not raw or not matched:
            return Rejection(401, f"invalid {self.header_name} header")
        return None

    def check_headers(self, headers: Mapping[str, str]) -> Rejection | None:
        """Authentication (401), content type (415) and declared length (413, 400)."""
        rejection = self.authenticate(headers)
        if rejection is not None:
            return rejection
        content_type = _header(headers, "Content-Type") or ""
        mime = content_type.partition(";")[0].strip().lower()
        if mime != "application/json":
            # A charset parameter is tolerated; the body must still be UTF-8 JSON (RFC 8259).
            return Rejection(415, "Content-Type must be application/json")
        length = _header(headers, "Content-Length")
        if length is not None:
            length = length.strip()
            if not (length.isascii() and length.isdigit()):
                return Rejection(400, "invalid Content-Length")
            if int(length) > self.max_body_size:
                return self.too_large()
        return None

    def too_large(self) -> Rejection:
        """The 413 answer for a body above :attr:`max_body_size`."""
        return Rejection(413, f"body larger than {self.max_body_size} bytes")

    def decode(self, body: bytes) -> WebhookPayload | Rejection:
        """The typed payload, 400 for malformed JSON, 422 for valid JSON of the wrong shape."""
        if len(body) > self.max_body_size:
            return self.too_large()
        try:
            return _DECODER.decode(body)
        except msgspec.ValidationError as exc:
            # msgspec checks types as it parses, so "[1" fails as a type error before the
            # syntax error is seen: parse untyped to tell 400 from 422.
            try:
                _ANY_DECODER.decode(body)
            except msgspec.DecodeError:
                return Rejection(400, "malformed JSON body")
            except RecursionError:
                return _TOO_DEEP
            return Rejection(422, f"unexpected payload shape: {exc}")
        except msgspec.DecodeError:
            return Rejection(400, "malformed JSON body")
        except RecursionError:
            # msgspec refuses nesting deeper than the interpreter's recursion limit: a body
            # no sender of webhooks produces, refused like any other malformed one
            return _TOO_DEEP

    def check_age(self, payload: WebhookPayload, now: float) -> Rejection | None:
        """409 when :attr:`max_age` is set and the event is older; 422 if it has no timestamp."""
        if self.max_age is None:
            return None
        timestamp = payload.event.timestamp if payload.event is not None else None
        if timestamp is None:
            return Rejection(422, "event.timestamp is required by this receiver (max_age)")
        if now - timestamp > self.max_age:
            return Rejection(409, f"event older than {self.max_age:g} seconds")
        return None

    def check(
        self, headers: Mapping[str, str], body: bytes, *, now: float | None = None
    ) -> WebhookPayload | Rejection:
        """Every check in order, on a complete request: the payload or the first rejection."""
        rejection = self.check_headers(headers)
        if rejection is not None:
            return rejection
        payload = self.decode(body)
        if isinstance(payload, Rejection):
            return payload
        rejection = self.check_age(payload, self.clock.now() if now is None else now)
        return payload if rejection is None else rejection

    def redact(self, headers: Mapping[str, str]) -> dict[str, str]:
        """The headers a handler (and the spool) may see: lower-cased, no secret header."""
        secret = self._header_lower
        out: dict[str, str] = {}
        for key, value in headers.items():
            lowered = key.lower()
            if lowered != secret:
                out[lowered] = value
        return out

    async def aclose(self) -> None:
        """Release the de-duplicator's resources (a Redis connection pool) and let go of
        the object store (closed if no one else uses it); again: no effect."""
        await self.dedup.aclose()
        objects, self.objects = self.objects, None
        if objects is not None:
            await objects.detach()
