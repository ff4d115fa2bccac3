"""The Client: lifecycle, configuration, and the resource namespaces users touch."""

from __future__ import annotations

import copy
import enum
import logging
import os
import ssl
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal

from asyncwifi._address import Address, check_base_path
from asyncwifi._auth import Secret, Token, TokenManager, redact_url
from asyncwifi._clock import Clock, SystemClock
from asyncwifi._core import RequestPipeline
from asyncwifi._defaults import TIMEOUT
from asyncwifi._env import ALLOW_HTTP_ENV as ALLOW_HTTP_ENV
from asyncwifi._env import ALLOWANCE_ENV as ALLOWANCE_ENV
from asyncwifi._env import ENV_VARS as ENV_VARS
from asyncwifi._env import TIMEOUT_ENV as TIMEOUT_ENV
from asyncwifi._env import env_flag as env_flag
from asyncwifi._env import plain_http_refusal as plain_http_refusal
from asyncwifi._env import timeout_of as timeout_of
from asyncwifi._hooks import Hooks
from asyncwifi._options import CallOptions, RawResponse
from asyncwifi._protocol import require_positive, require_text
from asyncwifi._request import send_request
from asyncwifi._resources import Contacts, Events, Hotspots, Segments
from asyncwifi._retry import RetryPolicy
from asyncwifi._stream import SCROLL_WINDOW
from asyncwifi._transport import AiohttpTransport, Transport
from asyncwifi.errors import (
    ApiError,
    ClientStateError,
    ConfigurationError,
    DecodeError,
    ValidationError,
)
from asyncwifi.models import LoginRequest, LoginResponse, decode, encode
from asyncwifi.ratelimit import Lane, Limits, QuotaSnapshot, RateStore, Scheduler, allowance_of

__all__ = [
    "ALLOWANCE_ENV",
    "ALLOW_HTTP_ENV",
    "ENV_VARS",
    "TIMEOUT_ENV",
    "Client",
    "ClientState",
    "HookKind",
    "env_flag",
    "plain_http_refusal",
    "timeout_of",
]

log = logging.getLogger("asyncwifi.client")

#: what a hook observes: an attempt sent, its response, a retry, an expired scroll resumed
#: (called with the resource), the limiter changing pace on the server's word (a
#: ``ThrottleEvent``), or a scope (a context manager) around each call or attempt
HookKind = Literal[
    "request", "response", "retry", "scroll_resume", "throttle", "call_scope", "attempt_scope"
]  # fmt: skip
_HOOK_KINDS: tuple[HookKind, ...] = (
    "request", "response", "retry", "scroll_resume", "throttle", "call_scope", "attempt_scope"
)  # fmt: skip
#: where each kind's callbacks live on the pipeline's hooks
_HOOK_LISTS = {
    "request": "on_request", "response": "on_response", "retry": "on_retry",
    "scroll_resume": "on_scroll_resume", "call_scope": "call_scopes",
    "attempt_scope": "attempt_scopes",
}  # fmt: skip

LOGIN_PATH = "/v1/sts/login/services"  # spec §4.1
LOGOUT_PATH = "/v1/sts/logout"


class ClientState(enum.Enum):
    """Lifecycle of a Client: opened once, closed once."""

    UNOPENED = "unopened"
    OPEN = "open"
    CLOSED = "closed"


def _check_options(
    *, limits: object, retry: object, timeout: object, scroll_window: object
) -> None:
    """Refuse a wrongly typed or out-of-range option at construction, not at first use (the
    limits' own fields are checked by :class:`Limits`)."""
    for value, kind, what in ((limits, Limits, "limits"), (retry, RetryPolicy, "retry")):
        if value is not None and not isinstance(value, kind):
            raise ConfigurationError(
                f"{what} must be a {kind.__name__} or None, got {type(value).__name__}"
            )
    for value, what in ((timeout, "timeout"), (scroll_window, "scroll_window")):
        require_positive(value, what, error=ConfigurationError)


class Client:
    """An asyncio client of the platform API; use it as ``async with Client(...) as api``.

    Every request (logins and retries included) passes the rate-aware scheduler, so the
    documented limits (60 a minute, 15,000 a day) are never exceeded (docs/guides/quota.md).

    Positional: the API key pair. Keyword options, grouped as httpx groups them:
    ``base_url`` (or ASYNCWIFI_BASE_URL: the API's address, which its paths follow; one
    ending with the API's version is refused, one where nothing answers is said at the first
    request: ``asyncwifi._address``) and ``organization`` (the default ``{cid}`` of
    organization paths); ``limits`` (a :class:`Limits`: the windows, what to do on a spent
    day, ``max_in_flight``, ``max_connections``) and ``rate_store`` (``RedisStore`` shares
    a key's limits across processes); ``retry`` (a :class:`RetryPolicy`); ``timeout``;
    ``scroll_window`` (spec §8: 60 s); ``hooks`` (``{kind: callback or callbacks}``, as
    :meth:`add_hook` takes them); ``transport`` (e.g. ``MockTransport``; the client closes
    it); ``ssl_context``;
    ``allow_http`` (plain http is refused otherwise); ``clock``.
    """

    def __init__(
        self,
        client_key: str,
        client_secret: str,
        *,
        base_url: str | None = None,
        organization: str | None = None,
        limits: Limits | None = None,
        rate_store: RateStore | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = TIMEOUT,
        max_wait: float | None = None,
        scroll_window: float = SCROLL_WINDOW,
        hooks: Mapping[HookKind, Callable[..., Any] | Sequence[Callable[..., Any]]] | None = None,
        transport: Transport | None = None,
        ssl_context: ssl.SSLContext | None = None,
        allow_http: bool = False,
        clock: Clock | None = None,
    ) -> None:
        require_text(client_key, "client_key")
        if not isinstance(client_secret, str) or not client_secret:
            raise ConfigurationError("client_secret must be a non-empty string")
        from_env = os.environ.get(ENV_VARS["base_url"])
        #: where the base URL was set, named by the errors of a wrong one
        source = ENV_VARS["base_url"] if not base_url or base_url == from_env else "base_url"
        base_url = base_url or from_env
        if not base_url:
            raise ConfigurationError("base_url is required (or set ASYNCWIFI_BASE_URL)")
        if not isinstance(base_url, str):
            raise ConfigurationError(f"base_url must be a string, got {type(base_url).__name__}")
        refusal = plain_http_refusal(base_url, allow_http)
        if refusal is not None:
            raise refusal
        check_base_path(base_url, source)
        if organization is not None:
            require_text(organization, "organization")
        _check_options(limits=limits, retry=retry, timeout=timeout, scroll_window=scroll_window)
        limits = limits or Limits()
        self._key = client_key
        self._secret = Secret(client_secret)
        self.base_url = base_url.rstrip("/")
        self.organization = organization
        self.clock: Clock = clock or SystemClock()
        self._state = ClientState.UNOPENED
        #: the client a view (``with_options``) was made from: it owns the lifecycle
        self._root: Client = self
        self._transport: Transport = transport or AiohttpTransport(
            self.base_url,
            timeout=timeout,
            max_connections=limits.max_connections,
            ssl_context=ssl_context,
        )
        self.scheduler = Scheduler(limits, store=rate_store, clock=self.clock)
        self._tokens = TokenManager(self._login, self._logout, clock=self.clock)
        self._api = RequestPipeline(
            transport=self._transport,
            scheduler=self.scheduler,
            tokens=self._tokens,
            clock=self.clock,
            retry=retry or RetryPolicy(),
            hooks=Hooks(),
            address=Address(self.base_url, source),
        )
        if max_wait is not None:  # every call's admission deadline (see with_options)
            self._api.options = CallOptions(max_wait=max_wait)
        for kind, callbacks in (hooks or {}).items():
            for callback in [callbacks] if callable(callbacks) else callbacks:
                self.add_hook(kind, callback)
        self._contacts = Contacts(self._api, organization, scroll_window)
        self._events = Events(self._api, organization, scroll_window)
        self._hotspots = Hotspots(self._api, organization)
        self._segments = Segments(self._api, organization)

    @classmethod
    def from_env(cls, **options: object) -> Client:
        """A client configured from ASYNCWIFI_CLIENT_KEY, ASYNCWIFI_CLIENT_SECRET,
        ASYNCWIFI_BASE_URL, ASYNCWIFI_ORGANIZATION, ASYNCWIFI_ALLOW_HTTP (``1`` lets a
        plain-http URL through, for a local simulator), ASYNCWIFI_TIMEOUT (``timeout``, in
        seconds) and ASYNCWIFI_ALLOWANCE (the month's
        object allowance, spec §8: ``20000``, ``"10 access points"``, ``"2000 contacts"``;
        the client's ``Limits(month=...)``, so budgets and reports can say what is left);
        keyword ``options`` win (``limits`` among them: its own ``month`` then)."""
        key = os.environ.get(ENV_VARS["client_key"])
        secret = os.environ.get(ENV_VARS["client_secret"])
        missing = [
            ENV_VARS[n] for n, v in (("client_key", key), ("client_secret", secret)) if not v
        ]
        if missing:
            raise ConfigurationError("missing environment variable(s): " + ", ".join(missing))
        options.setdefault("base_url", os.environ.get(ENV_VARS["base_url"]))
        options.setdefault("organization", os.environ.get(ENV_VARS["organization"]) or None)
        options.setdefault("allow_http", env_flag(os.environ.get(ALLOW_HTTP_ENV)))
        timeout = os.environ.get(TIMEOUT_ENV, "").strip()
        if timeout:
            options.setdefault("timeout", timeout_of(timeout, TIMEOUT_ENV))
        allowance = os.environ.get(ALLOWANCE_ENV, "").strip()
        if allowance and options.get("limits") is None:
            try:  # checked under the variable's name, before any request
                options["limits"] = Limits(month=allowance_of(allowance, ALLOWANCE_ENV))
            except ValidationError as exc:
                raise ConfigurationError(str(exc)) from None
        base_url = options["base_url"]
        if isinstance(base_url, str) and base_url:
            refusal = plain_http_refusal(
                base_url,
                bool(options["allow_http"]),
                f"set {ALLOW_HTTP_ENV}=1 or pass allow_http=True",
            )
            if refusal is not None:
                raise refusal
        assert key is not None
        assert secret is not None
        return cls(key, secret, **options)  # type: ignore[arg-type]

    # -- lifecycle -------------------------------------------------------------------------
    async def __aenter__(self) -> Client:
        self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    @property
    def state(self) -> ClientState:
        """Unopened, open or closed (a view's is its client's)."""
        return self._root._state

    def open(self) -> None:
        """Make the client usable (``async with`` does it); a client opens once."""
        self._own_lifecycle()
        if self.state is not ClientState.UNOPENED:
            raise ClientStateError(f"the client cannot be opened: it is {self.state.value}")
        self._state = ClientState.OPEN

    async def aclose(self) -> None:
        """Close connections and the scheduler. The token is not revoked (see ``logout``)."""
        self._own_lifecycle()
        if self.state is ClientState.CLOSED:
            return
        self._state = ClientState.CLOSED
        self._tokens.close()
        try:
            abandoned = self._api.abandoned
            if await abandoned.settle():  # pages asked for and left: in and counted
                abandoned.cancel()  # not in by then: what they held is not known
            await self.scheduler.aclose()
        finally:
            await self._transport.aclose()

    def _own_lifecycle(self) -> None:
        if self._root is not self:
            raise ClientStateError(
                "a view (with_options) is opened and closed with the client it was made from"
            )

    # -- the per-call door -------------------------------------------------------------------
    def with_options(
        self,
        *,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        max_wait: float | None = None,
        lane: Lane | str | None = None,
    ) -> Client:
        """A view of this client whose calls take other options (:class:`CallOptions`:
        ``timeout``, ``retry``, ``max_wait``, an admission deadline, and ``lane``); it shares
        the session, the token and the limiter (no second count), and lives as long as
        the client (it is not opened or closed itself). Bad values: ``ValidationError``."""
        options = CallOptions(timeout, retry, max_wait, lane)  # type: ignore[arg-type]
        view = copy.copy(self)
        view._api = api = self._api.derive(options)
        view._contacts = self._contacts.on(api)
        view._events = self._events.on(api)
        view._hotspots = self._hotspots.on(api)
        view._segments = self._segments.on(api)
        return view

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, object] | None = None,
        json: object = None,
        objects: str | None = None,
    ) -> RawResponse[Any]:
        """Any endpoint (``/v2/customers/{cid}/accountings``, locations, beacons...) through
        the login, the limiter, the retries and the object count: the raw response, its
        body decoded as JSON by :meth:`RawResponse.parse`. A GET is retried as any read; a
        write is never repeated unless it certainly did not happen (no way to check it
        here). ``objects``: the kind of object it exchanges (spec §8), counted as
        :func:`~asyncwifi._request.count_records` says (assumption: a list, or an
        envelope's ``data`` list, holds one object per item; another body one)."""
        return await send_request(self._require_open(), method, path, params, json, objects)

    def _require_open(self) -> RequestPipeline:
        if self.state is ClientState.OPEN:
            return self._api
        if self.state is ClientState.UNOPENED:
            raise ClientStateError("the client is not open: use `async with Client(...) as api`")
        raise ClientStateError("the client is closed")

    def add_hook(self, kind: HookKind, callback: Callable[[Any], None]) -> Callable[[], None]:
        """Add a hook after construction (metrics, tracing: :data:`HookKind` says what each
        kind observes); returns a function that removes it. A callback that raises is
        logged, never raised into a call."""
        if kind not in _HOOK_KINDS:
            raise ConfigurationError(f"hook kind must be one of {_HOOK_KINDS}, got {kind!r}")
        if not callable(callback):
            raise ConfigurationError(f"a hook must be callable, got {type(callback).__name__}")
        callbacks: list[Any] = (
            self.scheduler.on_throttle
            if kind == "throttle"
            else getattr(self._api.hooks, _HOOK_LISTS[kind])
        )
        callbacks.append(callback)

        def remove() -> None:
            if callback in callbacks:
                callbacks.remove(callback)

        return remove

    # -- resources -------------------------------------------------------------------------
    @property
    def contacts(self) -> Contacts:
        """Contacts (customers), spec §4.2."""
        self._require_open()
        return self._contacts

    @property
    def events(self) -> Events:
        """Events, spec §4.5."""
        self._require_open()
        return self._events

    @property
    def hotspots(self) -> Hotspots:
        """Hotspots (access points), spec §4.3."""
        self._require_open()
        return self._hotspots

    @property
    def segments(self) -> Segments:
        """Segments, spec §4.4."""
        self._require_open()
        return self._segments

    @property
    def quota(self) -> QuotaSnapshot:
        """What is known of the minute/day budget, and whether from the server or locally."""
        return self.scheduler.quota

    @property
    def logins(self) -> int:
        """How many logins this client made."""
        return self._tokens.logins

    # -- authentication ----------------------------------------------------------------------
    async def login(self) -> None:
        """Log in now (otherwise the first request does it)."""
        self._require_open()
        await self._tokens.get()

    async def logout(self) -> bool:
        """Revoke the current token on the server (spec §4.1); False when there was none."""
        self._require_open()
        return await self._tokens.logout()

    async def _login(self) -> str:
        body = encode(LoginRequest(client_key=self._key, client_secret=self._secret.reveal()))
        try:
            response = await self._api.read(
                "POST",
                LOGIN_PATH,
                tag="login",
                body=body,
                lane=Lane.INTERACTIVE,
                auth=False,
                decode=lambda b: decode(b, LoginResponse, what="login response"),
            )
        except (ApiError, DecodeError) as exc:
            wrong = self._api.address.login_refused(exc)
            if wrong is not None:
                raise wrong from exc  # no login route there: the base URL, not the key
            raise
        if not response.token:
            raise DecodeError("the login response holds no token")
        return response.token

    async def _logout(self, token: Token) -> None:
        # spec §4.1: the payload is not shown; the token is presented in the header
        await self._api.write(
            "POST",
            LOGOUT_PATH,
            tag="logout",
            body=b"{}",
            decode=lambda b: None,
            verify=None,
            token=token,
        )

    def __repr__(self) -> str:
        return (
            f"Client(base_url={redact_url(self.base_url)!r}, organization={self.organization!r}, "
            f"state={self.state.value}, client_key={self._key[:4]}…, client_secret=***)"
        )
