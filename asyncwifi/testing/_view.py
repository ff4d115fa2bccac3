"""What the simulator's parts read of the organization they serve (a
:class:`~asyncwifi.testing._tenant.Tenant` of the :class:`~asyncwifi.testing.Simulator`), as
a structural type: the handlers, the webhook emitter and ``client()`` depend on this view,
not on the tenant or server modules, which import them (no import cycle)."""

from __future__ import annotations

from typing import Protocol

from asyncwifi._clock import Clock
from asyncwifi.testing._auth import TokenAuthority
from asyncwifi.testing._counters import Counters
from asyncwifi.testing._data import SimulatorData
from asyncwifi.testing._limits import RateLimiter
from asyncwifi.testing._scroll import ScrollRegistry

__all__ = ["SimulatorView"]


class SimulatorView(Protocol):
    """The simulator's state its parts share (read-only to them, but for the objects'
    own methods)."""

    @property
    def seed(self) -> int: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def organization(self) -> str: ...
    @property
    def client_key(self) -> str: ...
    @property
    def client_secret(self) -> str: ...
    @property
    def key_revoked(self) -> bool: ...
    @property
    def data(self) -> SimulatorData: ...
    @property
    def limiter(self) -> RateLimiter: ...
    @property
    def auth(self) -> TokenAuthority: ...
    @property
    def scrolls(self) -> ScrollRegistry: ...
    @property
    def counters(self) -> Counters: ...
    @property
    def base_url(self) -> str: ...
    @property
    def contacts_max_size(self) -> int: ...
