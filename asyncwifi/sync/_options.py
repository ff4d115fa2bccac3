"""What a sync is asked to keep (:class:`SyncOptions`: the copy loop's options and the
sync's own) and what it did (:class:`SyncStats`: the copy loop's counts and the sync's)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from asyncwifi._defaults import EVENTS_PAGE_SIZE, LOOKBACK, OBJECT_SHARE, POLL_INTERVAL, SETTLE
from asyncwifi._defaults import FIRST_RUN as FIRST_RUN
from asyncwifi._protocol import require_positive, require_share
from asyncwifi.engine import (
    HOTSPOTS_CHANGED,
    MODIFIED_FROM,
    MODIFIED_TO,
    CopyOptions,
    CopyStats,
    lookback_of,
)
from asyncwifi.sync._plan import Insisted
from asyncwifi.sync._selection import event_types_of, resources_of

__all__ = ["DEFAULTS", "FIRST_RUN", "OBJECT_SHARE", "SyncOptions", "SyncStats"]

#: what the plan starts from where neither it nor the user sets a value (clock seconds; the
#: table's, ``asyncwifi._defaults``: ``FIRST_RUN`` and ``OBJECT_SHARE`` are its too)
DEFAULTS = Insisted(poll=POLL_INTERVAL, settle=SETTLE, lookback=LOOKBACK)


@dataclass
class SyncOptions(CopyOptions):
    """What a sync keeps and how often (durations in clock seconds); the copy loop's
    options (:class:`~asyncwifi.engine.CopyOptions`: retries, a full disk) too.

    A cadence left ``None`` is chosen by the sync's object plan (``_plan``: spec §8, objects
    are a quota too) from ``object_share`` of the month's allowance; one set to a number is
    a requirement, kept as set, and the plan warns at start when it cannot fit.
    """

    #: where a first run's events start (default: ``FIRST_RUN`` before ``until``, or now)
    since: datetime | None = None
    until: datetime | None = None
    #: between polls for new events (daemon; default 60 s)
    poll_interval: float | None = None
    #: events newer than this are left for the next poll (late writes upstream still land;
    #: default 60 s, or the lookback when the plan reads events once, a lookback late)
    settle: float | None = None
    #: events that appear up to this long after their own time are still stored: each span
    #: of event time is read once more a lookback later, or read once, a lookback late, as
    #: the plan chooses (0: off; see ``docs/guides/sync.md``, "Late events")
    lookback: float = LOOKBACK
    #: between reads of changed contacts and hotspots (and segments, when set)
    refresh_every: float | None = None
    #: between full contact reconciles (deleted contacts), in both modes
    reconcile_every: float | None = None
    #: the share of the month's object allowance (``Limits.month``) this sync plans to spend
    object_share: float = OBJECT_SHARE
    #: the query names of the contacts' modified-date filters (not shown in the reference)
    modified_from: str = MODIFIED_FROM
    modified_to: str = MODIFIED_TO
    #: the query name of the hotspot list's "date greater than" filter, read as "changed
    #: since" (not shown in the reference; "" reads the whole list at each refresh)
    hotspots_changed: str = HOTSPOTS_CHANGED
    #: events per request (spec §8: up to 10,000); contact pages are as large as the
    #: server accepts (``contacts.list(size="max")``, learnt once per client)
    page_size: int = EVENTS_PAGE_SIZE
    #: what the sync keeps (``_selection``): resources (None: all four; a comma list or a
    #: collection) and event types (None: every type); what is not kept is never read
    resources: Collection[str] | None = None
    event_types: Collection[str] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.resources = resources_of(self.resources)
        self.event_types = event_types_of(self.event_types)
        self.lookback = lookback_of(self.lookback)
        for name in ("poll_interval", "refresh_every", "reconcile_every", "settle"):
            if getattr(self, name) is not None:
                # 0: a reconcile at every pass, events read at once
                zero = name in ("reconcile_every", "settle")
                require_positive(getattr(self, name), name, zero=zero)
        require_share(self.object_share, "object_share")

    def first_start(self, now: datetime) -> datetime:
        """Where a first run's events start: ``since``, else ``FIRST_RUN`` before ``until``
        (or ``now``): the one rule (the sync's feed, and ``--since`` recorded, ``_earlier``)."""
        return self.since or (self.until or now) - FIRST_RUN

    @property
    def insisted(self) -> Insisted:
        """The cadences set (not left to the plan)."""
        return Insisted(
            self.poll_interval, self.settle, self.lookback, self.refresh_every,
            self.reconcile_every,
        )  # fmt: skip


@dataclass
class SyncStats(CopyStats):
    """What the sync did (the metrics read it): the copy loop's counts
    (:class:`~asyncwifi.engine.CopyStats`) and the sync's passes."""

    passes: int = 0
    last_success: float | None = None
    newest_event: datetime | None = None
    #: how many times the day's quota ran out and the sync slept until the reset
    quota_sleeps: int = 0
    #: objects a month the sync's plan projects (None: no plan yet)
    projection: int | None = None
