"""A fleet of organizations synced on Temporal: one long-lived workflow per organization.

``pip install 'asyncwifi[fleet]'`` (temporalio). The pieces, each in its own module:

- ``fleet.toml`` (:func:`load_fleet_config`): the organizations, their keys (secrets stay
  on the workers: Temporal never sees one), and their settings;
- the workflow (``_workflow``): a run of the sync, then a wait for the poll interval, the
  quota's reset or a signal (``sync_now``, ``pause``, ``resume``); a ``status`` query;
- the run (``_activities``): the sync daemon (:class:`~asyncwifi.sync.Syncer`) into the
  worker's database for ``run_for`` (an hour), under the organization's lease (a fencing
  token), heartbeating its counts every third of its heartbeat timeout;
- the worker (``_worker``) and the steering (``_control``), which the ``asyncwifi fleet``
  command runs.

This package imports temporalio only in the modules that need it: the configuration reads
without it. The door also passes, outside ``__all__`` (the public surface is at its 100
names), what the command line builds with, the temporalio ones loaded on first use:
``parse_fleet_config`` (a decoded ``fleet.toml``), ``apply_fleet`` and ``fleet_status``
(steering, given a Temporal client), ``OrganizationStatus`` (what a workflow answers),
``WorkerOptions`` and ``run_worker``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from asyncwifi.fleet._config import FleetConfig, load_fleet_config
from asyncwifi.fleet._config import parse_fleet_config as parse_fleet_config

if TYPE_CHECKING:
    from asyncwifi.fleet._control import apply_fleet as apply_fleet
    from asyncwifi.fleet._control import fleet_status as fleet_status
    from asyncwifi.fleet._worker import WorkerOptions as WorkerOptions
    from asyncwifi.fleet._worker import run_worker as run_worker
    from asyncwifi.fleet._workflow import OrganizationStatus as OrganizationStatus

__all__ = ["FleetConfig", "load_fleet_config"]

#: the door's names that need temporalio, and the module of each (loaded on first use)
_WITH_TEMPORAL = {
    "apply_fleet": "_control",
    "fleet_status": "_control",
    "WorkerOptions": "_worker",
    "run_worker": "_worker",
    "OrganizationStatus": "_workflow",
}


def __getattr__(name: str) -> Any:
    module = _WITH_TEMPORAL.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
