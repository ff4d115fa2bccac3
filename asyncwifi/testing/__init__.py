"""Test helpers users can import: the :class:`Simulator` of the whole platform API.

``async with Simulator() as sim:`` serves the documented API (spec §4) behind a gateway that
limits, counts and fails like the real one, with seeded data; point a client at
``sim.base_url`` with ``sim.client_key`` and ``sim.client_secret``.
"""

from asyncwifi.testing._counters import Counters
from asyncwifi.testing._faults import Faults
from asyncwifi.testing._server import DEFAULT_GONE_PATHS, Simulator
from asyncwifi.testing._webhooks import WEBHOOK_TYPES, make_webhook_payload

__all__ = [
    "DEFAULT_GONE_PATHS",
    "WEBHOOK_TYPES",
    "Counters",
    "Faults",
    "Simulator",
    "make_webhook_payload",
]
