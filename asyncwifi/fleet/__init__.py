"""A fleet of organizations synced on Temporal: one long-lived workflow per organization.

``pip install 'asyncwifi[fleet]'`` (temporalio). The pieces, each in its own module:

- ``fleet.toml`` (:func:`load_fleet_config`): the organizations, their keys (secrets stay
  on the workers: Temporal never sees one), and their settings;
- the workflow (``_workflow``): a pass, then a wait for the poll interval, the quota's
  reset or a signal (``sync_now``, ``pause``, ``resume``); a ``status`` query;
- the pass (``_activities``): the sync engine into the worker's database, under the
  organization's lease (a fencing token), heartbeating after each committed batch;
- the worker (``_worker``) and the ``asyncwifi fleet`` command (``asyncwifi.cli._fleet``).

This package imports temporalio only in the modules that need it: the configuration reads
without it.
"""

from asyncwifi.fleet._config import FleetConfig, load_fleet_config

__all__ = ["FleetConfig", "load_fleet_config"]
