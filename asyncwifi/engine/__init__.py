"""The engine every job runs on: feeds -> batches with checkpoints -> one copy loop -> a
destination, every record exactly once (the sync, the backfill, the contact export, the dlt
source and the fleet are jobs on it).

- **Feeds** hand out :class:`Batch` es (typed items and the server's exact bytes) with an
  opaque ``checkpoint`` to store with them: :class:`EventFeed` (a time cursor exact on
  every event record shape; a lookback re-reads the recent past for late events),
  :class:`ContactFeed` (changes and full scans) and :func:`snapshot` (hotspots, segments).
  A :class:`Budget` holds them to a share of the day's quota.
- **The copy loop**, :class:`Copier` (its :class:`CopyOptions`, its ``CopyStats``): each
  batch written with its checkpoint in one transaction, pipelined, retried while the
  destination is unreachable, stopped between transactions.
- **Destinations**, one :class:`Destination` contract (:class:`Write`: one transaction's
  worth): SQLite and PostgreSQL (:func:`open_destination`; unreachable:
  :class:`DestinationUnavailableError`; fenced by a lease: :class:`LeaseLostError`), and
  the JSON Lines output with its state file (``JsonlDestination``: its state bound to one
  job, else :class:`StateMismatchError`).
- **The lease** (``LeaseKeeper``): one writer of an organization at a time.

``__all__`` is what a program writes against. The door also passes, outside ``__all__``
(the public surface is at its 100 names), what the house's own jobs and command line
build with: ``CopyStats``; ``JsonlDestination``, ``JobParams``, ``StateInfo``,
``output_lock`` and ``LockHeldError`` (exports); ``LeaseKeeper``, ``LeaseHeldError``; the
destination's other errors (``DestinationFullError``, ``DestinationNotWritableError``,
``DestinationPermissionError``); the copy loop's subclassing hooks (``Stopped``,
``stoppable``, ``EVENTS``); the feeds' defaults and rules (``DEFAULT_LOOKBACK``,
``lookback_of``, ``lookback_setting``, ``Audit``, ``Rereads``, ``MODIFIED_FROM``,
``MODIFIED_TO``, ``HOTSPOTS_CHANGED``, ``changed_hotspots``, ``deleted_hotspots``,
``hotspot_tombstones``); the mass-delete guard's ``DeleteGuard``; the PII policy's
``PiiPolicy`` and ``PII_KEY_ENV``; erasure's ``Erased``, ``Suppression``,
``SuppressionKeyError`` and ``check_cids`` (``Destination.erase``); local retention's
``apply_retention`` and ``RETENTION_BY``.
"""

from asyncwifi.engine._budget import Budget
from asyncwifi.engine._copy import EVENTS as EVENTS
from asyncwifi.engine._copy import Copier, CopyOptions
from asyncwifi.engine._copy import CopyStats as CopyStats
from asyncwifi.engine._copy import Stopped as Stopped
from asyncwifi.engine._copy import stoppable as stoppable
from asyncwifi.engine._destination import (
    Destination,
    DestinationUnavailableError,
    LeaseLostError,
    StateMismatchError,
    Write,
)
from asyncwifi.engine._destination import DestinationFullError as DestinationFullError
from asyncwifi.engine._destination import (
    DestinationNotWritableError as DestinationNotWritableError,
)
from asyncwifi.engine._destination import (
    DestinationPermissionError as DestinationPermissionError,
)
from asyncwifi.engine._erasure import Erased as Erased
from asyncwifi.engine._erasure import Suppression as Suppression
from asyncwifi.engine._erasure import SuppressionKeyError as SuppressionKeyError
from asyncwifi.engine._erasure import check_cids as check_cids
from asyncwifi.engine._feeds import Batch, EventFeed
from asyncwifi.engine._guard import DeleteGuard as DeleteGuard
from asyncwifi.engine._jsonl import JsonlDestination as JsonlDestination
from asyncwifi.engine._jsonl import output_lock as output_lock
from asyncwifi.engine._jsonl_params import JobParams as JobParams
from asyncwifi.engine._jsonl_params import StateInfo as StateInfo
from asyncwifi.engine._lease import LeaseHeldError as LeaseHeldError
from asyncwifi.engine._lease import LeaseKeeper as LeaseKeeper
from asyncwifi.engine._lockfile import LockHeldError as LockHeldError
from asyncwifi.engine._lookback import DEFAULT_LOOKBACK as DEFAULT_LOOKBACK
from asyncwifi.engine._lookback import Audit as Audit
from asyncwifi.engine._lookback import lookback_of as lookback_of
from asyncwifi.engine._lookback import lookback_setting as lookback_setting
from asyncwifi.engine._open import open_destination
from asyncwifi.engine._pii import PII_KEY_ENV as PII_KEY_ENV
from asyncwifi.engine._pii import PiiPolicy as PiiPolicy
from asyncwifi.engine._rereads import Rereads as Rereads
from asyncwifi.engine._retention import RETENTION_BY as RETENTION_BY
from asyncwifi.engine._retention import apply_retention as apply_retention
from asyncwifi.engine._snapshots import HOTSPOTS_CHANGED as HOTSPOTS_CHANGED
from asyncwifi.engine._snapshots import MODIFIED_FROM as MODIFIED_FROM
from asyncwifi.engine._snapshots import MODIFIED_TO as MODIFIED_TO
from asyncwifi.engine._snapshots import ContactFeed, snapshot
from asyncwifi.engine._snapshots import changed_hotspots as changed_hotspots
from asyncwifi.engine._snapshots import deleted_hotspots as deleted_hotspots
from asyncwifi.engine._snapshots import hotspot_tombstones as hotspot_tombstones

__all__ = [
    "Batch",
    "Budget",
    "ContactFeed",
    "Copier",
    "CopyOptions",
    "Destination",
    "DestinationUnavailableError",
    "EventFeed",
    "LeaseLostError",
    "StateMismatchError",
    "Write",
    "open_destination",
    "snapshot",
]
