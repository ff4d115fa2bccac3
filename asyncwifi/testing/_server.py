"""The :class:`Simulator`: the platform API behind a Kong-like gateway, on aiohttp.web.

It serves one or many organizations (``organizations=N``), each with its own key, data,
limits and tokens (``_tenant``; the simulator's view of them: ``_organizations``), behind one
gateway (``_gateway``: the order in which a request meets limits, faults and authentication).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Self

from aiohttp import web

from asyncwifi._clock import Clock, SystemClock
from asyncwifi.errors import ClientStateError, ConfigurationError
from asyncwifi.testing._admin import admin_routes
from asyncwifi.testing._data import HotspotDate
from asyncwifi.testing._defaults import SIMULATOR_DEFAULTS as D
from asyncwifi.testing._defaults import SimulatorDefaults
from asyncwifi.testing._event_records import EventShape
from asyncwifi.testing._faults import Faults
from asyncwifi.testing._feed import LiveEvents
from asyncwifi.testing._gateway import Gateway
from asyncwifi.testing._handlers import Handler, SimulatedApi
from asyncwifi.testing._limits import Mode, RateLimiter
from asyncwifi.testing._organizations import Organizations
from asyncwifi.testing._tenant import TENANT, Tenant, Tenants

if TYPE_CHECKING:
    pass

__all__ = ["DEFAULT_GONE_PATHS", "Simulator"]

#: endpoints answered with 410 by default (spec §9: removed endpoints): the v1 contact list
#: and the legacy v2 hotspot API, both superseded
DEFAULT_GONE_PATHS: tuple[str, ...] = ("/v1/customers/organizations/*", "/v2/hotspots*")


def _bind(handler: Handler) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """A route handler calling ``handler`` on the API of the request's organization."""

    async def route(request: web.Request) -> web.StreamResponse:
        return await handler(request[TENANT].api, request)

    return route


class Simulator(Organizations):
    """A stateful fake of the whole platform API, behind a gateway that behaves like Kong.

    Use it as ``async with Simulator(...) as sim:`` (or ``await sim.start()`` /
    ``await sim.stop()``); it serves on ``sim.base_url`` with ``sim.client_key`` and
    ``sim.client_secret`` for the tenant ``sim.organization``; ``sim.client()`` is a client
    configured for it. Every time (windows, scroll and token lifetimes, reset headers) is
    read from ``clock``, so a :class:`~asyncwifi.ScaledClock` shared with the client runs
    minutes in fractions of a second. An option left out takes its value from
    :attr:`Simulator.DEFAULTS` (the defaults ``asyncwifi simulate`` and ``--simulate`` share).

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

    #: the one set of defaults (seeded data, gateway, lifetimes, speed, port) that
    #: ``Simulator()``, ``asyncwifi simulate`` and ``--simulate`` start from
    DEFAULTS: ClassVar[SimulatorDefaults] = D

    def __init__(
        self,
        *,
        seed: int = D.seed,
        clock: Clock | None = None,
        contacts: int = D.contacts,
        hotspots: int = D.hotspots,
        segments: int = D.segments,
        events: int = D.events,
        events_start: datetime | str | float = D.events_start,
        events_end: datetime | str | float = D.events_end,
        organization: str | None = None,
        client_key: str | None = None,
        client_secret: str | None = None,
        minute_limit: int = D.minute_limit,
        day_limit: int = D.day_limit,
        rate_limit_mode: Mode = D.rate_limit_mode,
        gateway_skew: float | None = None,
        count_refused: bool = False,
        object_limits: Mapping[str, int] | None = None,
        fractional_reset: bool = False,
        gone_paths: Iterable[str] = DEFAULT_GONE_PATHS,
        faults: Faults | None = None,
        scroll_ttl: float = D.scroll_ttl,
        scroll_single_use: bool = False,
        event_shape: EventShape = D.event_shape,
        hotspot_date: HotspotDate = D.hotspot_date,
        token_ttl: float = D.token_ttl,
        contacts_max_size: int = D.contacts_max_size,
        organizations: int = 1,
        live_events_per_second: float = 0.0,
        host: str = D.host,
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
