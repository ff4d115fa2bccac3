"""The :class:`Simulator`: the platform API behind a Kong-like gateway, on aiohttp.web.

Each request goes through the gateway middleware, in this order (gateway.md, spec §5, §7):

1. faults decided for the request (drop before anything, inbound delay);
2. the request limits (minute, day): a 429 here never reaches the API;
3. injected 5xx errors (counted by the gateway, nothing executed);
4. removed endpoints (410), unknown routes (404) and methods (405);
5. the bearer token (403 ``Access Denied``), except on the login;
6. the API handler, then the per-object limits (a bodyless 429 *after* execution);
7. headers on every response, truncation, added latency, drop after execution.
"""

from __future__ import annotations

import fnmatch
import math
import random
import secrets
from collections.abc import Iterable, Mapping
from datetime import datetime
from email.utils import formatdate
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from aiohttp import web

from asyncwifi._clock import Clock, SystemClock
from asyncwifi.errors import ClientStateError
from asyncwifi.testing._api import OBJECTS, TOKEN, ApiFault, drop_connection, json_response
from asyncwifi.testing._auth import TokenAuthority, TokenRejected
from asyncwifi.testing._counters import Counters
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START, SimulatorData
from asyncwifi.testing._event_records import EventShape
from asyncwifi.testing._faults import Fate, FaultPlan, Faults
from asyncwifi.testing._handlers import SimulatedApi
from asyncwifi.testing._kong import UPSTREAM_MESSAGES, negotiate, render_error
from asyncwifi.testing._limits import Mode, ObjectLimiter, RateLimiter
from asyncwifi.testing._scroll import ScrollRegistry
from asyncwifi.testing._sim_client import simulator_client
from asyncwifi.testing._util import BadParameter, hex_id

if TYPE_CHECKING:
    from asyncwifi._client import Client

__all__ = ["DEFAULT_GONE_PATHS", "Simulator"]

#: endpoints answered with 410 by default (spec §9: removed endpoints): the v1 contact list
#: and the legacy v2 hotspot API, both superseded
DEFAULT_GONE_PATHS: tuple[str, ...] = ("/v1/customers/organizations/*", "/v2/hotspots*")
_LOGIN = "/v1/sts/login/services"
_ADMIN = "/_simulator/"
_VIA = "1.1 kong/3.9.1"


class Simulator:
    """A stateful fake of the whole platform API, behind a gateway that behaves like Kong.

    Use it as ``async with Simulator(...) as sim:`` (or ``await sim.start()`` /
    ``await sim.stop()``); it serves on ``sim.base_url`` with ``sim.client_key`` and
    ``sim.client_secret`` for the tenant ``sim.organization``; ``sim.client()`` is a client
    configured for it. Every time (windows, scroll and token lifetimes, reset headers) is
    read from ``clock``, so a :class:`~asyncwifi.ScaledClock` shared with the client runs
    minutes in fractions of a second.

    Data (seeded, deterministic):
        seed: seed of all generated data, ids and request ids.
        contacts, hotspots, segments, events: how many of each to generate.
        events_start, events_end: the event time range (datetimes, ISO strings or epoch
            seconds; default January 2024: 2024-01-01 to 2024-01-31 UTC).
        event_shape: how event records are written (``observed.md``): ``"nested"`` (the
            default: the vendor's data example, pasted from real responses: ``event{type,
            id}``, ``when{createdAt,...}``), ``"flat"`` (the spec §2.4 schema: no time at
            all, the harshest for a client) or ``"dated"`` (legacy: flat plus ``date``).
        organization: the tenant id (default derived from the seed, ``org-...``).
        client_key, client_secret: the credentials (default: a seeded key, a random secret).

    Gateway:
        minute_limit, day_limit: requests per minute (60) and per day (15,000) (spec §8).
        rate_limit_mode: ``"fixed"`` (default: windows aligned to UTC on the clock's time
            line, minute on :00, day at 00:00), ``"skewed"`` (fixed windows on a gateway
            clock off by ``gateway_skew`` seconds, 23 by default), ``"sliding"`` (strict: at
            most N in any window of the period), ``"weighted"`` (the two-window estimate
            ``previous * (1 - elapsed / period) + current``) or ``"off"`` (never refuses;
            headers still sent).
        gateway_skew: seconds the gateway's clock is ahead of the simulator's (any mode
            with fixed windows: ``"fixed"``, ``"skewed"``, ``"weighted"``).
        count_refused: refused requests count too (Kong's Redis-backed counting).
        object_limits: per-object daily limits, e.g. ``{"hotspots": 10}``: headers
            ``X-RateLimit-Limit-Hotspots-Day``; once spent, a request that touches the
            object is *executed* and answered with a bodyless 429. Object names the API
            reports: ``contacts``, ``hotspots``, ``segments``, ``events`` (the number of
            objects returned, created, edited or deleted).
        fractional_reset: send ``RateLimit-Reset``/``Retry-After`` as fractional seconds
            (``0.412``) instead of Kong's whole seconds (at least 1). Whole seconds are the
            default, as on the real gateway; fractional ones suit scaled-time tests, where
            one clock second may be 10 ms.
        gone_paths: shell-style path patterns answered with 410 (spec §9).
        faults: a :class:`Faults` value (also settable at runtime: ``sim.faults = ...``).

    Lifetimes (clock seconds):
        scroll_ttl: a scroll id expires this long after the request that issued it (60).
        scroll_single_use: a scroll id answers like an expired one once it was used.
        contacts_max_size: the largest contact page ``size`` accepted (10,000, as the
            vendor documents; 100 plays a server that follows the reference): more is a 409.
        token_ttl: a token's lifetime (one day).

    Server:
        host, port: where to listen (``127.0.0.1``, a free port by default).
    """

    def __init__(
        self,
        *,
        seed: int = 0,
        clock: Clock | None = None,
        contacts: int = 250,
        hotspots: int = 12,
        segments: int = 6,
        events: int = 10_000,
        events_start: datetime | str | float = DEFAULT_EVENTS_START,
        events_end: datetime | str | float = DEFAULT_EVENTS_END,
        organization: str | None = None,
        client_key: str | None = None,
        client_secret: str | None = None,
        minute_limit: int = 60,
        day_limit: int = 15_000,
        rate_limit_mode: Mode = "fixed",
        gateway_skew: float | None = None,
        count_refused: bool = False,
        object_limits: Mapping[str, int] | None = None,
        fractional_reset: bool = False,
        gone_paths: Iterable[str] = DEFAULT_GONE_PATHS,
        faults: Faults | None = None,
        scroll_ttl: float = 60.0,
        scroll_single_use: bool = False,
        event_shape: EventShape = "nested",
        token_ttl: float = 86_400.0,
        contacts_max_size: int = 10_000,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.seed = seed
        #: the clock every time is read from
        self.clock: Clock = clock or SystemClock()
        self.organization = organization or f"org-{hex_id(seed, 0x0A6)[:16]}"
        self.client_key = client_key or f"ck_{hex_id(seed, 0xC1)}"
        self.client_secret = client_secret or secrets.token_urlsafe(32)
        #: the simulated organization's state (contacts, hotspots, segments, events)
        self.data = SimulatorData(
            seed=seed,
            organization=self.organization,
            contacts=contacts,
            hotspots=hotspots,
            segments=segments,
            events=events,
            events_start=events_start,
            events_end=events_end,
            event_shape=event_shape,
            clock=self.clock,
        )
        #: the gateway's request limits (sans-I/O; see ``_limits``)
        self.limiter = RateLimiter(
            minute=minute_limit,
            day=day_limit,
            mode=rate_limit_mode,
            count_refused=count_refused,
            fractional_reset=fractional_reset,
            skew=gateway_skew,
        )
        #: the per-object daily limits
        self.object_limiter = ObjectLimiter(object_limits)
        self.auth = TokenAuthority(
            key=secrets.token_bytes(32),
            ttl=token_ttl,
            organization=self.organization,
            user_id=f"svc-{hex_id(seed, 0x05E)[:20]}",
        )
        self.scrolls = ScrollRegistry(ttl=scroll_ttl, seed=seed, single_use=scroll_single_use)
        self.contacts_max_size = contacts_max_size
        self.gone_paths = tuple(gone_paths)
        #: what the simulator saw (see :class:`Counters`)
        self.counters = Counters()
        self.host = host
        self.port = port
        self._plan = FaultPlan(faults)
        self._competitor_next = math.inf
        # request ids identify one request, in logs too: unique across runs, not seeded data
        self._request_ids = random.Random(secrets.randbits(64))
        self._runner: web.AppRunner | None = None
        self._api = SimulatedApi(self)
        if faults is not None:
            self.faults = faults

    def __repr__(self) -> str:
        where = self.base_url if self._runner else "not started"
        return f"<Simulator {where} organization={self.organization} seed={self.seed}>"

    # -- configuration at runtime ---------------------------------------------------------

    @property
    def faults(self) -> Faults:
        """The faults in force; assigning a new value restarts its seeded sequence."""
        return self._plan.faults

    @faults.setter
    def faults(self, value: Faults | None) -> None:
        self._plan = FaultPlan(value)
        rate = self._plan.faults.hidden_competitor
        self._competitor_next = self.clock.now() + 60.0 / rate if rate > 0 else math.inf

    @property
    def admissions(self) -> list[float]:
        """Clock times of the client's admitted requests, in order."""
        return self.counters.admissions

    @property
    def user_id(self) -> str:
        """The service user's id (the ``id``/``sub`` claim of the tokens)."""
        return self.auth.user_id

    def revoke_tokens(self) -> int:
        """Revoke every token issued so far (as a dashboard key rotation would)."""
        return self.auth.revoke_all()

    def url(self, path: str) -> str:
        """``base_url`` joined with ``path``."""
        return self.base_url + path

    def client(self, **options: Any) -> Client:
        """A :class:`~asyncwifi.Client` configured for this running simulator (its URL,
        credentials, organization, clock, limits; plain http); ``options`` win."""
        return simulator_client(self, **options)

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` once started."""
        if self._runner is None:
            raise ClientStateError("the simulator is not started")
        return f"http://{self.host}:{self.port}"

    def make_app(self) -> web.Application:
        """The aiohttp application (routes and the gateway middleware)."""
        app = web.Application(middlewares=[self._gateway])
        for method, path, handler in self._api.routes():
            app.router.add_route(method, path, handler)
        app.router.add_get(_ADMIN + "counters", self._admin_counters)
        app.router.add_put(_ADMIN + "faults", self._admin_faults)
        return app

    async def start(self) -> None:
        """Start serving on ``host``:``port`` (a free port when 0)."""
        if self._runner is not None:
            return
        runner = web.AppRunner(self.make_app(), access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])

    async def stop(self) -> None:
        """Stop serving and close every connection."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- webhooks -------------------------------------------------------------------------

    async def emit_webhook(
        self,
        url: str,
        moment: str = "signup",
        *,
        headers: Mapping[str, str] | None = None,
        body_fields: Iterable[str] | None = None,
        request_timeout: float = 10.0,
        **overrides: Any,
    ) -> int:
        """POST a spec §6.2 payload for ``moment`` to ``url``, like the dashboard's test
        event; returns the receiver's status (``request_timeout`` in real seconds).

        ``headers`` are added to the request (the webhook's configured headers);
        ``overrides`` are merged into the payload and ``body_fields`` selects attributes,
        as in :func:`make_webhook_payload`; the contact and location come from ``data``.
        """
        from asyncwifi.testing._webhooks import post_webhook

        return await post_webhook(
            self,
            url,
            moment,
            headers=headers,
            body_fields=body_fields,
            request_timeout=request_timeout,
            overrides=overrides,
        )

    # -- the gateway ----------------------------------------------------------------------

    def _competitor(self, now: float) -> None:
        """Spend the hidden competitor's requests due by ``now`` (a fault)."""
        rate = self._plan.faults.hidden_competitor
        while self._competitor_next <= now:
            if self.limiter.decide(self._competitor_next).allowed:
                self.counters.competitor_hits += 1
            self._competitor_next += 60.0 / rate

    def _request_id(self) -> str:
        return f"{self._request_ids.getrandbits(128):032x}"

    @web.middleware
    async def _gateway(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path.startswith(_ADMIN):
            return await handler(request)  # type: ignore[no-any-return]
        c = self.counters
        c.requests += 1
        resource = request.match_info.route.resource
        c.by_endpoint[f"{request.method} {resource.canonical if resource else request.path}"] += 1
        fate = self._plan.fate(request.method, request.path)
        if fate.drop_before:
            c.faults["drop_before"] += 1
            return drop_connection(request)
        if fate.inbound_delay:
            await self.clock.sleep(fate.inbound_delay)
        now = self.clock.now()
        self._competitor(now)
        decision = self.limiter.decide(now, noise=fate.remaining_noise)
        request_id = self._request_id()
        if decision.allowed:
            c.admit(now)
            resp = await self._upstream(request, handler, fate, now)
        else:
            c.rate_limited += 1
            kind = "html" if fate.html_429 else negotiate(request.headers.get("Accept"))
            if fate.html_429:
                c.faults["html_429"] += 1
            body, ctype = render_error(kind, "API rate limit exceeded", request_id)
            resp = web.Response(status=429, body=body, content_type=ctype, charset="utf-8")
        headers = resp.headers
        if fate.date_429 and not decision.allowed:
            c.faults["date_429"] += 1
            headers["Retry-After"] = formatdate(now + decision.reset, usegmt=True)
        else:
            for name, value in decision.headers:
                headers[name] = value
        headers["X-Kong-Request-Id"] = request_id
        headers["Via"] = _VIA
        headers["X-Kong-Proxy-Latency"] = "0"
        if decision.allowed:
            headers["X-Kong-Upstream-Latency"] = "1"
        if fate.delay:
            if fate.spike:
                c.faults["spike"] += 1
            await self.clock.sleep(fate.delay)
        if fate.drop_after:
            c.faults["drop_after"] += 1
            return drop_connection(request)
        c.responses_by_status[resp.status] += 1
        return resp

    async def _upstream(
        self, request: web.Request, handler: Any, fate: Fate, now: float
    ) -> web.Response:
        """Everything behind the request limits: errors, routing, auth, API, object limits."""
        if fate.error_status:
            self.counters.faults["error"] += 1
            status = fate.error_status
            if fate.error_empty:
                return web.Response(status=status)
            return json_response({"message": UPSTREAM_MESSAGES.get(status, "error")}, status)
        path = request.path
        if any(fnmatch.fnmatchcase(path, p) for p in self.gone_paths):
            return json_response({"message": "This endpoint has been removed"}, 410)
        problem = request.match_info.http_exception
        if problem is not None:
            if problem.status == 405:
                not_allowed = json_response({"message": "Method not allowed"}, 405)
                allow = problem.headers.get("Allow")
                if allow:
                    not_allowed.headers["Allow"] = allow
                return not_allowed
            return json_response({"message": "no Route matched with those values"}, 404)
        if path != _LOGIN:
            revoke_every = self._plan.faults.revoke_tokens_every
            before = (now // revoke_every) * revoke_every if revoke_every else -math.inf
            try:
                request[TOKEN] = self.auth.verify(request.headers.get("Authorization"), now, before)
            except TokenRejected as exc:
                self.counters.auth_failures[exc.reason] += 1
                if exc.reason == "revoked_early":
                    self.counters.faults["revocation"] += 1
                return json_response({"message": "Access Denied"}, 403)
        limits = self.object_limiter
        snapshot = limits.snapshot(now) if limits.limits else None
        try:
            resp: web.Response = await handler(request)
        except ApiFault as exc:
            resp = json_response({"message": exc.message}, exc.status)
        except BadParameter as exc:
            resp = json_response({"message": str(exc)}, 409)
        if snapshot is not None:
            touched = request.get(OBJECTS, {}) if resp.status < 400 else {}
            object_headers, stop = limits.settle(now, snapshot, touched)
            if stop:
                # gateway.md: executed, then replaced by a 429 with no body
                self.counters.object_limited += 1
                resp = web.Response(status=429)
            for name, value in object_headers:
                resp.headers[name] = value
        if fate.truncate_at and 200 <= resp.status < 300 and resp.body:
            body = bytes(resp.body)  # type: ignore[arg-type]
            self.counters.faults["truncated"] += 1
            resp.body = body[: max(1, int(len(body) * fate.truncate_at))]
        return resp

    # -- admin (not behind the gateway) ---------------------------------------------------

    async def _admin_counters(self, request: web.Request) -> web.Response:
        """GET /_simulator/counters: ``sim.counters`` as JSON (for a separate process)."""
        return json_response(self.counters.summary())

    async def _admin_faults(self, request: web.Request) -> web.Response:
        """PUT /_simulator/faults: replace the faults with the JSON body's fields."""
        self.faults = Faults.from_dict(await request.json())
        return json_response({"status": "OK"})
