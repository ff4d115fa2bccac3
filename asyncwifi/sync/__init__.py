"""The sync job: keep a database in step with the platform, on the engine
(:mod:`asyncwifi.engine`: its feeds, its copy loop, its destinations).

:class:`Syncer` runs one pass (:meth:`Syncer.run_once`) or a daemon
(:meth:`Syncer.run_forever`) into a destination (``asyncwifi.engine.open_destination``:
``sqlite:///PATH`` or ``postgresql://...``), on an object plan made from its
:class:`SyncOptions`' share of the month's allowance (see ``docs/guides/sync.md``).

The door also passes, outside ``__all__`` (the public surface is at its 100 names), what
the command line and the fleet build with: ``SyncStats`` (what a sync did: the copy loop's
counts and its passes), ``SyncMetrics`` (``/metrics`` and ``/healthz``), ``SyncPlan`` (an
object plan, as ``on_plan`` sees it), ``FIRST_RUN`` and ``read_earlier`` (``--since``
earlier than what the database holds), ``erase_contacts`` and its ``Erasure`` (erase
contacts upstream and from every mirror, for good: ``asyncwifi contacts erase``).
"""

from asyncwifi.sync._earlier import read_earlier as read_earlier
from asyncwifi.sync._erase import Erasure as Erasure
from asyncwifi.sync._erase import erase_contacts as erase_contacts
from asyncwifi.sync._metrics import SyncMetrics as SyncMetrics
from asyncwifi.sync._options import FIRST_RUN as FIRST_RUN
from asyncwifi.sync._options import SyncOptions
from asyncwifi.sync._options import SyncStats as SyncStats
from asyncwifi.sync._plan import SyncPlan as SyncPlan
from asyncwifi.sync._runner import Syncer

__all__ = ["SyncOptions", "Syncer"]
