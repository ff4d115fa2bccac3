"""The organizations a :class:`~asyncwifi.testing.Simulator` serves, as it shows them: the
first one's state as the simulator's own attributes (``sim.data``, ``sim.client()``...),
each one's by id or index (``sim.tenant(org)``), and their events, added now or live."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from asyncwifi._clock import Clock
from asyncwifi.errors import ClientStateError
from asyncwifi.testing._auth import TokenAuthority
from asyncwifi.testing._counters import Counters
from asyncwifi.testing._data import SimulatorData
from asyncwifi.testing._feed import LiveEvents
from asyncwifi.testing._limits import ObjectLimiter, RateLimiter
from asyncwifi.testing._scroll import ScrollRegistry
from asyncwifi.testing._tenant import Credentials, Tenant, Tenants

if TYPE_CHECKING:
    from asyncwifi._client import Client

__all__ = ["Organizations"]


class Organizations:
    """The simulator's organizations (its ``_tenants``, on its ``clock``), and the live
    feed of events it may run for them."""

    clock: Clock
    _tenants: Tenants
    _feed: LiveEvents | None

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
