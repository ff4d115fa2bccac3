"""Resumable bulk exports: event backfills in time slices and contact exports, exactly once.

The plan (:func:`plan_slices`, :func:`estimate`) is sans-I/O; :class:`ExportJob` streams the
slices concurrently through the client, writes each record as the server's own JSON (JSON
Lines, optionally gzip) and commits progress to a SQLite state file after every page, so a
job killed at any moment resumes without losing or repeating a record.
"""

from asyncwifi._deprecated import renamed
from asyncwifi.backfill._commit import event_date
from asyncwifi.backfill._contract import (
    JobOutcome,
    PageLike,
    Progress,
    Reporter,
    StreamLike,
    StreamRequest,
)
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
from asyncwifi.backfill._state import JobParams, SliceState, StateInfo, StateStore

__all__ = [
    "BackfillError",
    "ExportJob",
    "JobOutcome",
    "JobParams",
    "JsonlOutput",
    "OutputConflictError",
    "OutputNotWritableError",
    "PageLike",
    "PlanEstimate",
    "Progress",
    "Reporter",
    "Slice",
    "SliceIncompleteError",
    "SliceState",
    "StateInfo",
    "StateMismatchError",
    "StateStore",
    "StreamLike",
    "StreamRequest",
    "contacts_export",
    "contacts_params",
    "encode_lines",
    "estimate",
    "even_slice_size",
    "event_date",
    "events_backfill",
    "events_params",
    "parse_duration",
    "parse_instant",
    "plan_slices",
    "preflight",
    "requests_time",
]

# names before the rename that gave every word one meaning across the package
__getattr__ = renamed(__name__, {"JsonlSink": "JsonlOutput", "Outcome": "JobOutcome"}, globals())
