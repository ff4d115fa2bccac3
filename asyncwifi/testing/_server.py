"""The :class:`Simulator`: the platform API behind a Kong-like gateway, on aiohttp.web.

It serves one or many organizations (``organizations=N``), each with its own key, data,
limits and tokens (``_tenant``), behind one gateway (``_gateway``: the order in which a
request meets limits, faults and authentication).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from aiohttp import web

from asyncwifi._clock import Clock, SystemClock
from asyncwifi.errors import ClientStateError, ConfigurationError
from asyncwifi.testing._admin import admin_routes
from asyncwifi.testing._auth import TokenAuthority
from asyncwifi.testing._counters import Counters
from asyncwifi.testing._data import (
    DEFAULT_EVENTS_END,
    DEFAULT_EVENTS_START,
    HotspotDate,
    SimulatorData,
)
from asyncwifi.testing._event_records import EventShape
from asyncwifi.testing._faults import Faults
from asyncwifi.testing._feed import LiveEvents
from asyncwifi.testing._gateway import Gateway
from asyncwifi.testing._handlers import Handler, SimulatedApi
from asyncwifi.testing._limits import Mode, ObjectLimiter, RateLimiter
from asyncwifi.testing._scroll import ScrollRegistry
from asyncwifi.testing._tenant import TENANT, Credentials, Tenant, Tenants

if TYPE_CHECKING:
    from asyncwifi._client import Client

__all__ = ["DEFAULT_GONE_PATHS", "Simulator"]

#: endpoints answered with 410 by default (spec §9: removed endpoints): the v1 contact list
#: and the legacy v2 hotspot API, both superseded
DEFAULT_GONE_PATHS: tuple[str, ...] = ("/v1/customers/organizations/*", "/v2/hotspots*")


def _bind(handler: Handler) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """A route handler calling ``handler`` on the API of the request's organization."""

    async def route(request: web.Request) -> web.StreamResponse:
        return await handler(request[TENANT].api, request)

    return route


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
        hotspot_date: what a hotspot's ``date`` (spec §2.2: "string", its meaning not shown)
            is, and so what the list's ``dateGt``/``dateLt`` filters select: ``"modified"``
            (the default: a change or a delete moves it to the clock's day) or
            ``"created"`` (it never moves: the filter finds new hotspots only).
        organization: the tenant id (default derived from the seed, ``org-...``).
        client_key, client_secret: the credentials (default: a seeded key, a random secret).

    Organizations:
        organizations: how many organizations to serve (1). Organization ``i`` has its own
            id, key, secret and data (seed ``seed + i``, the sizes above; built on its
            first request), gateway limits (the options below, counted per key as Kong
            counts per consumer), tokens, scrolls and counters. ``organization``,
            ``client_key`` and ``client_secret`` name the first; so do ``sim.organization``,
            ``sim.data``, ``sim.counters``, ``sim.client()``... ``sim.organizations`` lists
            every one's credentials; ``sim.tenant(org)`` (id or index) is one's state.
        live_events_per_second: events each organization gains per clock second while
            the simulator runs (0: none; see :meth:`start_feed`).

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
        hotspot_date: HotspotDate = "modified",
        token_ttl: float = 86_400.0,
        contacts_max_size: int = 10_000,
        organizations: int = 1,
        live_events_per_second: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if isinstance(organizations, bool) or not isinstance(organizations, int):
            raise ConfigurationError(f"organizations must be an int, not {organizations!r}")
        if organizations < 1:
            raise ConfigurationError(f"organizations must be at least 1, not {organizations}")
        if not live_events_per_second >= 0:
            raise ConfigurationError("live_events_per_second must not be negative")
        self.seed = seed
        #: the clock every time is read from
        self.clock: Clock = clock or SystemClock()
        data_options = {
            "contacts": contacts,
            "hotspots": hotspots,
            "segments": segments,
            "events": events,
            "events_start": events_start,
            "events_end": events_end,
            "event_shape": event_shape,
            "hotspot_date": hotspot_date,
        }
        self._tenants = Tenants(
            [
                Tenant(
                    self,
                    seed=seed + i,
                    organization=None if i else organization,
                    client_key=None if i else client_key,
                    client_secret=None if i else client_secret,
                    data_options=data_options,
                    limiter=RateLimiter(
                        minute=minute_limit,
                        day=day_limit,
                        mode=rate_limit_mode,
                        count_refused=count_refused,
                        fractional_reset=fractional_reset,
                        skew=gateway_skew,
                    ),
                    object_limits=object_limits,
                    token_ttl=token_ttl,
                    scroll_ttl=scroll_ttl,
                    scroll_single_use=scroll_single_use,
                    eager=not i,  # the first's data now: its options are checked here
                )
                for i in range(organizations)
            ]
        )
        self.live_events_per_second = live_events_per_second
        self._feed: LiveEvents | None = None
        self.contacts_max_size = contacts_max_size
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None
        #: the gateway: faults, and each organization's limits and tokens, per request
        self.gateway = Gateway(self._tenants, self.clock, tuple(gone_paths), faults)

    def __repr__(self) -> str:
        where = self.base_url if self._runner else "not started"
        more = f" (+{len(self._tenants) - 1} more)" if len(self._tenants) > 1 else ""
        return f"<Simulator {where} organization={self.organization}{more} seed={self.seed}>"

    # -- configuration at runtime ---------------------------------------------------------

    @property
    def faults(self) -> Faults:
        """The faults in force; assigning a new value restarts its seeded sequence."""
        return self.gateway.faults

    @faults.setter
    def faults(self, value: Faults | None) -> None:
        self.gateway.faults = value

    @property
    def gone_paths(self) -> tuple[str, ...]:
        """Shell-style path patterns answered with 410 (spec §9)."""
        return self.gateway.gone_paths

    # -- the first organization (the single-organization attributes) -----------------------

    @property
    def organization(self) -> str:
        """The first organization's id."""
        return self._tenants.first.organization

    @property
    def client_key(self) -> str:
        return self._tenants.first.client_key

    @property
    def client_secret(self) -> str:
        return self._tenants.first.client_secret

    @property
    def data(self) -> SimulatorData:
        """The first organization's state (contacts, hotspots, segments, events)."""
        return self._tenants.first.data

    @property
    def limiter(self) -> RateLimiter:
        """The first organization's request limits (sans-I/O; see ``_limits``)."""
        return self._tenants.first.limiter

    @property
    def object_limiter(self) -> ObjectLimiter:
        return self._tenants.first.object_limiter

    @property
    def auth(self) -> TokenAuthority:
        return self._tenants.first.auth

    @property
    def scrolls(self) -> ScrollRegistry:
        return self._tenants.first.scrolls

    @property
    def counters(self) -> Counters:
        """What the simulator saw of the first organization (see :class:`Counters`)."""
        return self._tenants.first.counters

    @property
    def admissions(self) -> list[float]:
        """Clock times of the first organization's admitted requests, in order."""
        return self._tenants.first.admissions

    @property
    def user_id(self) -> str:
        """The service user's id (the ``id``/``sub`` claim of the tokens)."""
        return self._tenants.first.user_id

    def revoke_tokens(self) -> int:
        """Revoke every token of the first organization issued so far (a key rotation)."""
        return self._tenants.first.revoke_tokens()

    def client(self, **options: Any) -> Client:
        """A :class:`~asyncwifi.Client` configured for this running simulator and its
        first organization (URL, credentials, organization, clock, limits; plain http);
        ``options`` win. ``sim.tenant(org).client()`` is one for another organization."""
        return self._tenants.first.client(**options)

    # -- many organizations -----------------------------------------------------------------

    @property
    def organizations(self) -> list[Credentials]:
        """Each organization's ``(organization, client_key, client_secret)``, in order."""
        return [t.credentials for t in self._tenants]

    @property
    def tenants(self) -> list[Tenant]:
        """Each organization's state, in order."""
        return list(self._tenants)

    def tenant(self, organization: str | int) -> Tenant:
        """One organization's state, by id or index (``KeyError`` if there is none)."""
        return self._tenants.get(organization)

    def revoke_key(self, organization: str | int, *, tokens: bool = True) -> None:
        """Revoke one organization's key: its logins answer 401 (and, with ``tokens``, its
        live tokens are refused with 403, so its clients notice at once)."""
        self._tenants.get(organization).revoke_key(tokens=tokens)

    def add_events(
        self,
        count: int,
        *,
        organization: str | int | None = None,
        at: datetime | str | float | None = None,
        until: datetime | str | float | None = None,
    ) -> dict[str, list[str]]:
        """Add ``count`` new events to one organization, or to each when ``organization``
        is ``None`` (see :meth:`SimulatorData.add_events` for ``at``/``until``); the new
        ids by organization."""
        chosen = self._tenants if organization is None else [self._tenants.get(organization)]
        return {t.organization: t.add_events(count, at=at, until=until) for t in chosen}

    def start_feed(
        self,
        rate: float,
        *,
        organizations: Iterable[str | int] | None = None,
        tick: float | None = None,
        late_share: float = 0.0,
        late_by: float = 0.0,
        contact_changes: float = 0.0,
    ) -> LiveEvents:
        """Start adding ``rate`` events per clock second to each organization (or to the
        given ones) in the background, until :meth:`stop_feed` or :meth:`stop`: a
        ``late_share`` of them late by up to ``late_by`` s, and ``contact_changes``
        contacts changed per clock second (see :class:`LiveEvents`). Needs a running event
        loop; one feed at a time."""
        if self._feed is not None and self._feed.running:
            raise ClientStateError("a feed is already running: stop_feed() first")
        chosen = (
            list(self._tenants)
            if organizations is None
            else [self._tenants.get(o) for o in organizations]
        )
        self._feed = LiveEvents(
            chosen, self.clock, rate, tick, late_share=late_share, late_by=late_by,
            contact_changes=contact_changes,
        )  # fmt: skip
        self._feed.start()
        return self._feed

    @property
    def feed(self) -> LiveEvents | None:
        """The feed started by :meth:`start_feed` (or ``live_events_per_second``), if any."""
        return self._feed

    async def stop_feed(self) -> None:
        """Stop the background feed (an error it met is raised here)."""
        feed, self._feed = self._feed, None
        if feed is not None:
            await feed.stop()

    def url(self, path: str) -> str:
        """``base_url`` joined with ``path``."""
        return self.base_url + path

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` once started."""
        if self._runner is None:
            raise ClientStateError("the simulator is not started")
        return f"http://{self.host}:{self.port}"

    def make_app(self) -> web.Application:
        """The aiohttp application (routes and the gateway middleware)."""
        app = web.Application(middlewares=[self.gateway.middleware])
        for method, path, handler in SimulatedApi.routes():
            app.router.add_route(method, path, _bind(handler))
        for method, path, admin in admin_routes(self.gateway):
            app.router.add_route(method, path, admin)
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
        if self.live_events_per_second > 0:
            self.start_feed(self.live_events_per_second)

    async def stop(self) -> None:
        """Stop serving (and the feed) and close every connection."""
        runner, self._runner = self._runner, None
        try:
            await self.stop_feed()
        finally:
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
            self._tenants.first,
            url,
            moment,
            headers=headers,
            body_fields=body_fields,
            request_timeout=request_timeout,
            overrides=overrides,
        )
