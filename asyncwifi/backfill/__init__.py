"""Resumable bulk exports: event backfills in time slices and contact exports, exactly once.

:func:`events_backfill` and :func:`contacts_export` give an :class:`ExportJob`: it runs the
sync's engine (its feeds, its one loop) into a JSON Lines destination, each record as the
server's own JSON (optionally gzip), each batch committed with its checkpoint to a SQLite
state file, so a job killed at any moment resumes without losing or repeating a record.
A :class:`Reporter` sees its :class:`Progress`; ``run()`` ends with a ``JobOutcome``.
"""

from asyncwifi.backfill._contract import Progress, Reporter
from asyncwifi.backfill._engine import ExportJob
from asyncwifi.backfill._errors import (
    BackfillError,
    OutputNotWritableError,
    SliceIncompleteError,
    StateMismatchError,
)
from asyncwifi.backfill._jobs import contacts_export, events_backfill

__all__ = [
    "BackfillError",
    "ExportJob",
    "OutputNotWritableError",
    "Progress",
    "Reporter",
    "SliceIncompleteError",
    "StateMismatchError",
    "contacts_export",
    "events_backfill",
]
