"""Resumable bulk exports: event backfills in time slices and contact exports, exactly once.

:func:`events_backfill` and :func:`contacts_export` give an :class:`ExportJob`: the engine's
feeds run through its copy loop (:class:`~asyncwifi.engine.Copier`) into a JSON Lines
destination, each record as the server's own JSON (optionally gzip), each batch committed
with its checkpoint to a SQLite state file, so a job killed at any moment resumes without
losing or repeating a record. A :class:`Reporter` sees its :class:`Progress`; ``run()``
ends with a ``JobOutcome``. A state file of another job is refused
(:class:`~asyncwifi.engine.StateMismatchError`), an output that cannot be written too
(``DestinationNotWritableError``, a :class:`~asyncwifi.errors.ConfigurationError`).

The door also passes, outside ``__all__`` (the public surface is at its 100 names), what
the command line builds with: ``JobOutcome``; ``events_params`` and ``contacts_params``
(what a state file is bound to, known before a client exists); the slice plan
(``Slice``, ``plan_slices``, ``even_slice_size``, ``estimate``, ``requests_time``) and
``EVENTS_PAGE_SIZE``.
"""

from asyncwifi.backfill._contract import JobOutcome as JobOutcome
from asyncwifi.backfill._contract import Progress, Reporter
from asyncwifi.backfill._errors import SliceIncompleteError
from asyncwifi.backfill._export import ExportJob
from asyncwifi.backfill._jobs import EVENTS_PAGE_SIZE as EVENTS_PAGE_SIZE
from asyncwifi.backfill._jobs import contacts_export, events_backfill
from asyncwifi.backfill._jobs import contacts_params as contacts_params
from asyncwifi.backfill._jobs import events_params as events_params
from asyncwifi.backfill._plan import Slice as Slice
from asyncwifi.backfill._plan import estimate as estimate
from asyncwifi.backfill._plan import even_slice_size as even_slice_size
from asyncwifi.backfill._plan import plan_slices as plan_slices
from asyncwifi.backfill._plan import requests_time as requests_time

__all__ = [
    "ExportJob",
    "Progress",
    "Reporter",
    "SliceIncompleteError",
    "contacts_export",
    "events_backfill",
]
