"""What a sync is asked to keep (:class:`SyncOptions`) and what it did (:class:`SyncStats`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from asyncwifi.sync._lookback import DEFAULT_LOOKBACK, lookback_of
from asyncwifi.sync._snapshots import MODIFIED_FROM, MODIFIED_TO

__all__ = ["FIRST_RUN", "SyncOptions", "SyncStats"]

#: how far back a first run reads events when no ``since`` says where (7 days: the command's
#: ``--since`` default too)
FIRST_RUN = timedelta(days=7)


@dataclass
class SyncOptions:
    """What a sync keeps and how often (durations in clock seconds)."""

    #: where a first run's events start (default: ``FIRST_RUN`` before ``until``, or now)
    since: datetime | None = None
    until: datetime | None = None
    #: between polls for new events (daemon)
    poll_interval: float = 60.0
    #: events newer than this are left for the next poll (late writes upstream still land)
    settle: float = 60.0
    #: events that appear up to this long after their own time are still stored: the
    #: recent past is re-read (0: off; see ``docs/guides/sync.md``, "Late events")
    lookback: float = DEFAULT_LOOKBACK
    #: between refreshes of contacts (changes), hotspots and segments (daemon)
    refresh_every: float = 900.0
    #: between full contact reconciles (deleted contacts), in both modes
    reconcile_every: float = 86_400.0
    #: the share of the month's object allowance this sync plans to spend
    object_share: float = 0.9
    #: the query names of the contacts' modified-date filters (not shown in the reference)
    modified_from: str = MODIFIED_FROM
    modified_to: str = MODIFIED_TO
    #: events per request (spec §8: up to 10,000); contact pages are as large as the
    #: server accepts (``contacts.list(size="max")``, learnt once per client)
    page_size: int = 10_000
    #: the first and longest wait before retrying an unreachable database (real seconds)
    retry_initial: float = 0.5
    retry_max: float = 30.0

    def __post_init__(self) -> None:
        self.lookback = lookback_of(self.lookback)


@dataclass
class SyncStats:
    """What the sync did (the metrics read it)."""

    rows: dict[str, int] = field(default_factory=dict)
    dead_letters: int = 0
    requests: dict[str, int] = field(default_factory=dict)
    passes: int = 0
    last_success: float | None = None
    newest_event: datetime | None = None
    store_down_since: float | None = None
    #: how many times the database became unreachable
    store_outages: int = 0
    #: how many times the day's quota ran out and the sync slept until the reset
    quota_sleeps: int = 0
    #: late events stored, by what found them: ``lookback``, or ``audit`` (later than the
    #: lookback); and the requests the re-reads spent (within ``requests["events"]``)
    late_events: dict[str, int] = field(default_factory=lambda: {"lookback": 0, "audit": 0})
    lookback_requests: int = 0
    #: objects a month the sync's plan projects (None: no plan yet)
    projection: int | None = None
