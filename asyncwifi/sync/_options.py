"""What a sync is asked to keep (:class:`SyncOptions`) and what it did (:class:`SyncStats`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from asyncwifi._protocol import require_positive
from asyncwifi.errors import ValidationError
from asyncwifi.sync._lookback import DEFAULT_LOOKBACK, lookback_of
from asyncwifi.sync._plan import Insisted
from asyncwifi.sync._snapshots import HOTSPOTS_CHANGED, MODIFIED_FROM, MODIFIED_TO

__all__ = ["DEFAULTS", "FIRST_RUN", "OBJECT_SHARE", "SyncOptions", "SyncStats"]

#: how far back a first run reads events when no ``since`` says where (7 days: the command's
#: ``--since`` default too)
FIRST_RUN = timedelta(days=7)
#: what the plan starts from where neither it nor the user sets a value (clock seconds)
DEFAULTS = Insisted(poll=60.0, settle=60.0, lookback=DEFAULT_LOOKBACK)
#: the share of the month's object allowance a sync plans to spend (the rest: other users
#: of the key, webhooks, and room for the organization to grow before the next plan)
OBJECT_SHARE = 0.9


@dataclass
class SyncOptions:
    """What a sync keeps and how often (durations in clock seconds).

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
    lookback: float = DEFAULT_LOOKBACK
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
    page_size: int = 10_000
    #: the first and longest wait before retrying an unreachable database (real seconds)
    retry_initial: float = 0.5
    retry_max: float = 30.0

    def __post_init__(self) -> None:
        self.lookback = lookback_of(self.lookback)
        for name in ("poll_interval", "refresh_every", "reconcile_every", "settle"):
            if getattr(self, name) is not None:
                # 0: a reconcile at every pass, events read at once
                zero = name in ("reconcile_every", "settle")
                require_positive(getattr(self, name), name, zero=zero)
        share = self.object_share
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
            raise ValidationError(f"object_share must be within (0, 1], got {share!r}")

    @property
    def insisted(self) -> Insisted:
        """The cadences set (not left to the plan)."""
        return Insisted(
            self.poll_interval, self.settle, self.lookback, self.refresh_every,
            self.reconcile_every,
        )  # fmt: skip


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
