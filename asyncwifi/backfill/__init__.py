"""Resumable bulk exports: event backfills in time slices and contact exports, exactly once.

The plan (:func:`plan_slices`, :func:`estimate`) is sans-I/O; :class:`ExportJob` runs the
sync's engine (its feeds, its one loop) into a JSON Lines destination: each record as the
server's own JSON (optionally gzip), each batch committed with its checkpoint to a SQLite
state file, so a job killed at any moment resumes without losing or repeating a record.
"""

from asyncwifi.backfill._contract import JobOutcome, Progress, Reporter
from asyncwifi.backfill._engine import ExportJob
from asyncwifi.backfill._errors import (
    BackfillError,
    OutputConflictError,
    OutputNotWritableError,
    SliceIncompleteError,
    StateMismatchError,
)
from asyncwifi.backfill._jobs import (
    contacts_export,
    contacts_params,
    events_backfill,
    events_params,
)
from asyncwifi.backfill._plan import (
    PlanEstimate,
    Slice,
    estimate,
    even_slice_size,
    parse_duration,
    parse_instant,
    plan_slices,
    requests_time,
)
from asyncwifi.backfill._preflight import preflight
from asyncwifi.backfill._sink import JsonlOutput, encode_lines
from asyncwifi.backfill._state import JobParams, StateInfo, StateStore

__all__ = [
    "BackfillError",
    "ExportJob",
    "JobOutcome",
    "JobParams",
    "JsonlOutput",
    "OutputConflictError",
    "OutputNotWritableError",
    "PlanEstimate",
    "Progress",
    "Reporter",
    "Slice",
    "SliceIncompleteError",
    "StateInfo",
    "StateMismatchError",
    "StateStore",
    "contacts_export",
    "contacts_params",
    "encode_lines",
    "estimate",
    "even_slice_size",
    "events_backfill",
    "events_params",
    "parse_duration",
    "parse_instant",
    "plan_slices",
    "preflight",
    "requests_time",
]
