"""``Simulator.client()``: a :class:`~asyncwifi.Client` configured for a running simulator.

Its URL, credentials, organization, clock and minute/day limits come from the simulator,
and plain http is allowed (the simulator serves on localhost without TLS).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from asyncwifi._client import Client
    from asyncwifi.testing._view import SimulatorView

__all__ = ["simulator_client"]


def simulator_client(sim: SimulatorView, **options: Any) -> Client:
    """A client for ``sim`` (started); keyword ``options`` are ``Client``'s and win, and
    :class:`~asyncwifi.Limits` fields among them (``on_exhausted="raise"``,
    ``max_in_flight=4``) adjust the simulator's limits."""
    from asyncwifi._client import Client
    from asyncwifi.ratelimit import Limit, Limits

    limits = sim.limiter.limits
    minute, day = Limit(limits["minute"], 60.0), Limit(limits["day"], 86_400.0)
    tuning = {k: options.pop(k) for k in list(options) if k in Limits.__dataclass_fields__}
    defaults: dict[str, Any] = {
        "base_url": sim.base_url,
        "organization": sim.organization,
        "clock": sim.clock,
        "allow_http": True,
        "limits": Limits(minute=minute, day=day, **tuning),
    }
    return Client(sim.client_key, sim.client_secret, **{**defaults, **options})
