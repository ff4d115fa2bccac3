"""Keep a database in step with the platform: feeds, checkpoints, destinations, the syncer.

The primitives work without the ``asyncwifi sync`` command:

- :class:`EventFeed`, :class:`ContactFeed` and :func:`snapshot` hand out :class:`Batch`
  es of records (typed item + the server's exact bytes) with an opaque ``checkpoint`` to
  store in the same transaction as the records, so that "records written" and "position
  saved" never disagree; exact on every event record shape (see ``docs/guides/sync.md``).
- :class:`Budget` divides a share of the day's quota between resources, counted by the
  limiter (every process's on the key with a ``RedisStore``).
- A :class:`Destination` (:func:`open_destination`: ``sqlite:///PATH`` or
  ``postgresql://...``) writes a batch, its dead letters, deletes and checkpoints in one
  transaction, one organization's rows (``for_organization``: another's, on the same
  connections); ``take_lease`` fences a writer off once another took the organization
  (:class:`LeaseLostError`).
- :class:`Syncer` runs them: one pass (:meth:`Syncer.run_once`) or a daemon.
"""

from asyncwifi.sync._budget import Budget
from asyncwifi.sync._destination import (
    Destination,
    DestinationUnavailableError,
    LeaseLostError,
    Write,
)
from asyncwifi.sync._feeds import Batch, EventFeed
from asyncwifi.sync._open import open_destination
from asyncwifi.sync._options import SyncOptions
from asyncwifi.sync._runner import Syncer
from asyncwifi.sync._snapshots import ContactFeed, snapshot

__all__ = [
    "Batch",
    "Budget",
    "ContactFeed",
    "Destination",
    "DestinationUnavailableError",
    "EventFeed",
    "LeaseLostError",
    "SyncOptions",
    "Syncer",
    "Write",
    "open_destination",
    "snapshot",
]
