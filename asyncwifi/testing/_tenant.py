"""One organization the simulator serves (a tenant): everything that is per account.

The real platform gives each organization its own API key, data, tokens and gateway limits
(Kong counts per consumer). A :class:`Tenant` holds that state for one organization: its
credentials, its :class:`SimulatorData` (built on first use, so a simulator of a thousand
organizations starts at once), its :class:`RateLimiter` and :class:`ObjectLimiter`, its
:class:`TokenAuthority`, :class:`ScrollRegistry`, :class:`Counters` and the API handlers
bound to them. :class:`Tenants` finds the tenant a request belongs to.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import msgspec
from aiohttp import web

from asyncwifi._clock import Clock
from asyncwifi.errors import ConfigurationError
from asyncwifi.testing._api import LOGIN_PATH
from asyncwifi.testing._auth import TokenAuthority, claimed_organization
from asyncwifi.testing._counters import Counters
from asyncwifi.testing._data import SimulatorData
from asyncwifi.testing._handlers import SimulatedApi
from asyncwifi.testing._limits import ObjectLimiter, RateLimiter
from asyncwifi.testing._scroll import ScrollRegistry
from asyncwifi.testing._sim_client import simulator_client
from asyncwifi.testing._util import hex_id

if TYPE_CHECKING:
    from asyncwifi._client import Client

__all__ = ["TENANT", "Credentials", "Tenant", "Tenants"]


class Credentials(NamedTuple):
    """What a client of one organization needs (a fleet.toml entry)."""

    organization: str
    client_key: str
    client_secret: str

    def __repr__(self) -> str:  # the secret stays out of logs
        return f"Credentials(organization={self.organization!r}, client_key={self.client_key!r})"


class _Host(Protocol):
    """What a tenant reads of the simulator serving it."""

    @property
    def base_url(self) -> str: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def contacts_max_size(self) -> int: ...


class Tenant:
    """One organization's credentials and state (see the module docstring).

    ``seed`` derives its ids, key and data; ``data_options`` are :class:`SimulatorData`
    keywords (sizes, range, shape); ``eager`` builds the data now (it is otherwise built on
    first use: the first request, or ``tenant.data``).
    """

    def __init__(
        self,
        host: _Host,
        *,
        seed: int,
        organization: str | None,
        client_key: str | None,
        client_secret: str | None,
        data_options: Mapping[str, Any],
        limiter: RateLimiter,
        object_limits: Mapping[str, int] | None,
        token_ttl: float,
        scroll_ttl: float,
        scroll_single_use: bool,
        eager: bool = False,
    ) -> None:
        self._host = host
        self.seed = seed
        self.organization = organization or f"org-{hex_id(seed, 0x0A6)[:16]}"
        self.client_key = client_key or f"ck_{hex_id(seed, 0xC1)}"
        self.client_secret = client_secret or secrets.token_urlsafe(32)
        #: the gateway's request limits for this organization's key (sans-I/O; ``_limits``)
        self.limiter = limiter
        #: the per-object daily limits
        self.object_limiter = ObjectLimiter(object_limits)
        self.auth = TokenAuthority(
            key=secrets.token_bytes(32),
            ttl=token_ttl,
            organization=self.organization,
            user_id=f"svc-{hex_id(seed, 0x05E)[:20]}",
        )
        self.scrolls = ScrollRegistry(ttl=scroll_ttl, seed=seed, single_use=scroll_single_use)
        #: what the simulator saw of this organization's requests (see :class:`Counters`)
        self.counters = Counters()
        #: whether the key was revoked (logins answer 401; see :meth:`revoke_key`)
        self.key_revoked = False
        self._data_options = dict(data_options)
        self._data: SimulatorData | None = None
        self._api: SimulatedApi | None = None
        if eager:
            _ = self.data

    def __repr__(self) -> str:
        return f"<Tenant organization={self.organization} seed={self.seed}>"

    # -- what the handlers read (``SimulatorView``) -----------------------------------------

    @property
    def clock(self) -> Clock:
        return self._host.clock

    @property
    def base_url(self) -> str:
        return self._host.base_url

    @property
    def contacts_max_size(self) -> int:
        return self._host.contacts_max_size

    @property
    def data(self) -> SimulatorData:
        """The organization's contacts, hotspots, segments and events (built on first use)."""
        if self._data is None:
            self._data = SimulatorData(
                seed=self.seed,
                organization=self.organization,
                clock=self._host.clock,
                **self._data_options,
            )
        return self._data

    @property
    def api(self) -> SimulatedApi:
        """The API handlers bound to this organization's state."""
        if self._api is None:
            self._api = SimulatedApi(self)
        return self._api

    # -- for tests ------------------------------------------------------------------------

    @property
    def credentials(self) -> Credentials:
        """(organization, client_key, client_secret)."""
        return Credentials(self.organization, self.client_key, self.client_secret)

    @property
    def user_id(self) -> str:
        """The service user's id (the ``id``/``sub`` claim of the tokens)."""
        return self.auth.user_id

    @property
    def admissions(self) -> list[float]:
        """Clock times of this organization's admitted requests, in order."""
        return self.counters.admissions

    def client(self, **options: Any) -> Client:
        """A :class:`~asyncwifi.Client` for this organization on the running simulator."""
        return simulator_client(self, **options)

    def revoke_tokens(self) -> int:
        """Revoke every token issued so far (as a dashboard key rotation would)."""
        return self.auth.revoke_all()

    def revoke_key(self, *, tokens: bool = True) -> None:
        """Revoke the API key: logins answer 401 from now on and, with ``tokens``, the
        tokens already issued are refused too (403), so a client notices at once."""
        self.key_revoked = True
        if tokens:
            self.revoke_tokens()

    def restore_key(self) -> None:
        """Accept the key again (tokens revoked meanwhile stay revoked)."""
        self.key_revoked = False

    def add_events(
        self,
        count: int,
        *,
        at: datetime | str | float | None = None,
        until: datetime | str | float | None = None,
    ) -> list[str]:
        """:meth:`SimulatorData.add_events` on this organization's data: the new ids."""
        return self.data.add_events(count, at=at, until=until)

    def set_limits(self, *, minute: int | None = None, day: int | None = None) -> None:
        """Change this key's request limits (what it already spent stays counted)."""
        self.limiter.set_limits(minute=minute, day=day)

    def spend_quota(self, count: int, period: str = "day") -> None:
        """Count ``count`` requests now against ``period`` (``"minute"`` or ``"day"``), as
        another client of the same key would: ``spend_quota(15_000)`` spends the day."""
        self.limiter.spend(self.clock.now(), count, period)


class Tenants:
    """The simulator's organizations, in order, by id and by client key."""

    def __init__(self, tenants: list[Tenant]) -> None:
        if not tenants:
            raise ConfigurationError("organizations must be at least 1")
        self._list = tenants
        self._by_org = {t.organization: t for t in tenants}
        self._by_key = {t.client_key: t for t in tenants}
        if len(self._by_org) != len(tenants) or len(self._by_key) != len(tenants):
            raise ConfigurationError("two organizations share an id or a client key")
        #: the first organization (the single-organization attributes are its)
        self.first = tenants[0]

    def __len__(self) -> int:
        return len(self._list)

    def __iter__(self) -> Iterator[Tenant]:
        return iter(self._list)

    def get(self, organization: str | int) -> Tenant:
        """The tenant of ``organization``: its id, or its index (0 is the first)."""
        if isinstance(organization, int):
            if not 0 <= organization < len(self._list):
                raise KeyError(f"no organization #{organization} (0..{len(self._list) - 1})")
            return self._list[organization]
        tenant = self._by_org.get(organization)
        if tenant is None:
            raise KeyError(f"no organization {organization!r}")
        return tenant

    def find(self, text: str) -> Tenant:
        """The tenant named by ``text``: an organization id, else an index (``"0"``)."""
        tenant = self._by_org.get(text)
        if tenant is not None:
            return tenant
        if text.isdigit():
            return self.get(int(text))
        raise KeyError(f"no organization {text!r}")

    async def of_request(self, request: web.Request) -> Tenant:
        """The organization whose quota a request spends, as the gateway sees it before it
        checks anything: the ``clientKey`` of a login, else the organization a bearer token
        claims. Requests that name none (or an unknown one) count on the first."""
        if len(self._list) == 1:
            return self.first
        if request.path == LOGIN_PATH:
            try:
                body = msgspec.json.decode(await request.read())
            except msgspec.DecodeError:
                return self.first
            key = body.get("clientKey") if isinstance(body, dict) else None
            return self._by_key.get(key, self.first) if isinstance(key, str) else self.first
        org = claimed_organization(request.headers.get("Authorization"))
        return self._by_org.get(org, self.first) if org is not None else self.first


#: request key of the organization a request belongs to (set by the gateway)
TENANT = web.RequestKey("asyncwifi.tenant", Tenant)
