"""Test helpers users can import: the :class:`Simulator` of the whole platform API.

``async with Simulator() as sim:`` serves the documented API (spec §4) behind a gateway that
limits, counts and fails like the real one, with seeded data; point a client at
``sim.base_url`` with ``sim.client_key`` and ``sim.client_secret``; ``Simulator(organizations=N)``
serves N organizations, each with its own key, data and limits. :class:`Faults` injects
failures, :class:`SimulatorProcess` runs a simulator in a child process,
:func:`make_webhook_payload` builds §6.2 webhook bodies, and
``asyncwifi.testing.pytest_plugin`` offers pytest fixtures.

``Simulator.DEFAULTS`` (a :class:`SimulatorDefaults`, importable here, not in ``__all__``: the
public surface is at its 100 names) is the one set of defaults that ``Simulator()``,
``asyncwifi simulate`` and ``--simulate`` start from. The door also passes, outside
``__all__``, what the ``asyncwifi simulate`` command builds with: ``run_simulator`` and
``AnchoredClock`` (a simulator serving in this process, on a time line shared with
another), the gateway's counting ``MODES``, and the seeded events' default range
(``DEFAULT_EVENTS_START``, ``DEFAULT_EVENTS_END``).
"""

from asyncwifi.testing._data import DEFAULT_EVENTS_END as DEFAULT_EVENTS_END
from asyncwifi.testing._data import DEFAULT_EVENTS_START as DEFAULT_EVENTS_START
from asyncwifi.testing._defaults import SimulatorDefaults as SimulatorDefaults
from asyncwifi.testing._faults import Faults
from asyncwifi.testing._limits import MODES as MODES
from asyncwifi.testing._process import AnchoredClock as AnchoredClock
from asyncwifi.testing._process import SimulatorProcess
from asyncwifi.testing._process import run_simulator as run_simulator
from asyncwifi.testing._server import Simulator
from asyncwifi.testing._webhooks import make_webhook_payload

__all__ = [
    "Faults",
    "Simulator",
    "SimulatorProcess",
    "make_webhook_payload",
]
