"""Test helpers users can import: the :class:`Simulator` of the whole platform API.

``async with Simulator() as sim:`` serves the documented API (spec §4) behind a gateway that
limits, counts and fails like the real one, with seeded data; point a client at
``sim.base_url`` with ``sim.client_key`` and ``sim.client_secret``; ``Simulator(organizations=N)``
serves N organizations, each with its own key, data and limits. :class:`Faults` injects
failures, :class:`SimulatorProcess` runs a simulator in a child process,
:func:`make_webhook_payload` builds §6.2 webhook bodies, and
``asyncwifi.testing.pytest_plugin`` offers pytest fixtures.
"""

from asyncwifi.testing._faults import Faults
from asyncwifi.testing._process import SimulatorProcess
from asyncwifi.testing._server import Simulator
from asyncwifi.testing._webhooks import make_webhook_payload

__all__ = [
    "Faults",
    "Simulator",
    "SimulatorProcess",
    "make_webhook_payload",
]
