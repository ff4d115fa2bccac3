"""The sync's object plan (spec §8: objects are a quota too): from its share of the month's
allowance and what it knows of the organization, how often to re-read for late events,
refresh hotspots and segments and reconcile contacts, so that the month stays inside it.

Sans-I/O: :func:`plan_sync` takes the allowance, the share, what was observed
(:class:`Observed`: the rate of new events and contact changes, the sizes of the contact,
hotspot and segment sets (live rows: what was deleted is not read again), what the month
has spent already and how many of its days are left, how late the audit found events) and
what the user insisted on (a ``SyncOptions`` field set to a number), and returns a
:class:`SyncPlan`: the cadences, what each costs a month, the projection, and warnings for
requirements that cannot fit.

**The month**: what the store counted this month for the key (the sync's first read, a
backfill, webhooks, other processes) is spent already; a rung fits when a month of it fits
in the share and its cost for the days left (the projection scaled to them) in what is
left of it. A rung more thorough than the one in force must leave :data:`HEADROOM` of both
unspent, so that a plan on the edge does not go up and down at every re-plan.
A cadence the user set is costed as it runs: ``reconcile=0`` (a reconcile at every pass)
at the pass's cadence, not the rung's.

Every read costs objects (each record returned), so the plan buys, in this order, what the
share can hold (the first rung of :data:`LADDER` whose month fits):

1. late events found three ways (a forward read, the final re-read a lookback later, the
   audit two lookbacks later), segments hourly, contacts reconciled weekly;
2. the audit dropped (each event read twice), segments every 6 h;
3. contacts reconciled monthly, segments daily, changes read hourly;
4. events read once, a lookback after their time (``settle`` = the lookback: nothing is
   re-read, every event up to the lookback late is found at the first read, all of them a
   lookback later than on the rungs above);
5. the floor: segments weekly, contacts reconciled every 90 days.

Changes (new events, changed contacts and hotspots) are read whatever the rung: their
objects are the floor; a rung changes how often each is read and what is read again.

**Late events on every rung**: below the first, the audit stays, reading only where the
feed delivered nothing (its objects are what it finds: no cost is planned for it; see
``_lookback``), and the lookback follows the lateness it found: a lookback the user left
at its default grows to the one that stores what the audit found on time, up to
``MAX_LOOKBACK`` (it costs no object on any rung: each span is re-read once, or read once,
whatever its length; only the delay grows: on the one-read rung, every event's).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from asyncwifi._defaults import POLL_INTERVAL
from asyncwifi._instant import human_duration
from asyncwifi.engine import DEFAULT_LOOKBACK, Audit, lookback_setting
from asyncwifi.ratelimit import ALL, COMPASS_PER_CONTACT, SPLASH_PER_ACCESS_POINT

__all__ = [
    "DAYS_A_MONTH",
    "HEADROOM",
    "LADDER",
    "Cadence",
    "Insisted",
    "Observed",
    "SyncPlan",
    "human_count",
    "plan_sync",
]

DAY = 86_400.0
#: an average month (365.25 / 12 days): what "a month" of a projection is
DAYS_A_MONTH = 30.44
#: until observed, the contacts changed a day (a share of the contacts)
ASSUMED_CONTACT_CHANGES = 0.01
#: the part of the share a more thorough rung than the one in force must leave unspent
HEADROOM = 0.1
#: what a sync may read (``_selection.RESOURCES``), each costed apart
_KINDS = ("events", "contacts", "hotspots", "segments")

Late = Literal["audited", "reread", "delayed", "off"]


@dataclass(frozen=True, slots=True)
class Cadence:
    """One rung of the plan: how late events are found and how often each read runs
    (clock seconds; ``math.inf``: never)."""

    late: Late
    #: contacts' and hotspots' changes (and the daemon's refresh loop)
    refresh: float
    segments: float
    #: full contact scans (they find deleted contacts)
    reconcile: float
    #: full hotspot lists (deleted hotspots, and changes a date filter cannot see)
    hotspots_reconcile: float


#: the rungs, most thorough first (see the module docstring)
LADDER: tuple[Cadence, ...] = (
    Cadence("audited", 900.0, 3_600.0, 7 * DAY, DAY),
    Cadence("reread", 900.0, 6 * 3_600.0, 7 * DAY, DAY),
    Cadence("reread", 3_600.0, DAY, 30 * DAY, 7 * DAY),
    Cadence("delayed", 3_600.0, DAY, 30 * DAY, 7 * DAY),
    Cadence("delayed", 6 * 3_600.0, 7 * DAY, 90 * DAY, 30 * DAY),
)


@dataclass(frozen=True, slots=True)
class Observed:
    """What the sync knows of the organization (rates per day; sizes in records)."""

    events_per_day: float = 0.0
    contacts: int = 0
    #: None: not measured yet (:data:`ASSUMED_CONTACT_CHANGES` of the contacts)
    contact_changes_per_day: float | None = None
    hotspots: int = 0
    hotspot_changes_per_day: float = 0.0
    segments: int = 0
    #: objects the store counted this month for the key so far (every kind, every user:
    #: this sync's reads, a backfill, webhooks, other processes)
    spent: float = 0.0
    #: days left in the month (None: plan a whole month, nothing spent)
    days_left: float | None = None
    #: the lookback that would have stored on time what the audit found (0: nothing found)
    late_by: float = 0.0
    #: whether the hotspots' date filter reads changes only (else: the whole list)
    hotspot_filter: bool = True
    #: whether anything was observed (a first run knows nothing before its first pass)
    known: bool = True


@dataclass(frozen=True, slots=True)
class Insisted:
    """What the user set (None: the plan chooses); seconds."""

    poll: float | None = None
    settle: float | None = None
    lookback: float | None = None
    refresh: float | None = None
    reconcile: float | None = None


@dataclass(frozen=True, slots=True)
class SyncPlan:
    """The cadences chosen, what they cost a month and why (see the module docstring)."""

    cadence: Cadence
    poll: float
    settle: float
    lookback: float
    #: objects a month this sync may spend (None: no allowance known: nothing is bounded)
    share: int | None
    #: where the allowance came from, in words
    allowance: str
    #: objects a month by what reads them
    costs: Mapping[str, int]
    warnings: tuple[str, ...] = ()
    #: what the plan was made from
    observed: Observed = field(default_factory=Observed)
    #: its rung's place in :data:`LADDER` (0: the most thorough)
    rung: int = 0
    #: the resources the sync keeps (the others cost nothing: never read)
    resources: frozenset[str] = field(default_factory=lambda: frozenset(_KINDS))

    @property
    def projection(self) -> int:
        """Objects a month at these cadences."""
        return sum(self.costs.values())

    @property
    def late(self) -> Late:
        return self.cadence.late

    @property
    def audit(self) -> Audit:
        """The whole slice on the thorough rung, else only where nothing was delivered."""
        return "off" if self.late == "off" else "full" if self.late == "audited" else "gaps"

    @property
    def room(self) -> float | None:
        """What is left of the share this month (None: no allowance known)."""
        return None if self.share is None else self.share - self.observed.spent

    @property
    def fits(self) -> bool:
        """Whether it fits: a month of it in the share, and the rest of this month in what
        is left of it (no allowance known: nothing is bounded)."""
        return self.fits_with(1.0)

    def fits_with(self, part: float) -> bool:
        """Whether it fits in ``part`` of the share and of what is left of it."""
        if self.share is None or self.room is None:
            return True
        return self.projection <= part * self.share and self.rest <= part * self.room

    @property
    def rest(self) -> int:
        """Objects for the rest of the month at these cadences (the projection, scaled to
        the days left)."""
        days = self.observed.days_left
        scale = 1.0 if days is None else min(1.0, max(0.0, days) / DAYS_A_MONTH)
        return round(self.projection * scale)

    @property
    def gist(self) -> tuple[object, ...]:
        """What makes a plan worth saying again: its cadences, reads and the kinds of its
        warnings (not their figures, which move at every plan)."""
        kinds = tuple(re.sub(r"\d[\d,.]*", "#", w) for w in self.warnings)
        return self.cadence, self.poll, self.settle, self.lookback, kinds

    def log(self, logger: logging.Logger) -> None:
        """Say the plan in ``logger``: its lines, then each warning once, as a warning."""
        for line in self.describe()[: -len(self.warnings) or None]:
            logger.info("sync: %s", line)
        for warning in self.warnings:
            logger.warning("sync: object plan: %s", warning)

    def describe(self) -> list[str]:
        """The plan in a few lines: what it chose, what that costs, what does not fit."""
        c, share = self.cadence, self.share
        fits = "no allowance known" if share is None else f"share {share:,}"
        head = f"object plan: {human_count(self.projection)} objects a month ({fits}"
        head += f"; allowance: {self.allowance})"
        known = self.observed.known
        if not known:  # no cost to say: a plan of 0 objects would be a wrong figure
            head = "object plan of a first pass, thorough (nothing observed yet: the plan is "
            head += "remade after it, with what it cost)"
        lookback, settle = human_duration(self.lookback), human_duration(self.settle)
        late = {
            "audited": f"each read 3x: on time, {lookback} later, and an audit",
            "reread": f"each read 2x: on time and once more {lookback} later, audited where "
            "nothing was read",
            "delayed": f"each read once, {settle} after its time, audited where nothing was read",
            "off": "each read once; late events are not looked for (lookback 0)",
        }[c.late]
        if self.observed.late_by and c.late != "off":
            late += f" (the audit found events up to {human_duration(self.observed.late_by)} late)"
        kinds = ("events", "contacts", "hotspots", "segments")
        cost = {k: f": {human_count(self.costs.get(k, 0))}" if known else "" for k in kinds}
        refresh = human_duration(c.refresh)
        reads = {
            "events": f"  events: {late}{cost['events']}",
            "contacts": f"  contacts: changes every {refresh}, all of them every "
            f"{human_duration(c.reconcile)}{cost['contacts']}",
            "hotspots": f"  hotspots: changes every {refresh}, all every "
            f"{human_duration(c.hotspots_reconcile)}{cost['hotspots']}",
            "segments": f"  segments: every {human_duration(c.segments)}{cost['segments']}",
        }
        lines = [head] + [
            reads[k] if k in self.resources else f"  {k}: not kept (--resources): 0" for k in kinds
        ]
        days = self.observed.days_left
        if days is not None and known:
            lines.append(
                f"  this month: {human_count(self.observed.spent)} counted for the key so far; "
                f"{human_count(self.rest)} planned for the {days:.1f} days left"
            )
        return lines + [f"  warning: {w}" for w in self.warnings]


def human_count(n: float) -> str:
    """An object count for a plan line: ``12,345``."""
    return f"{round(n):,}"


def allowance_of_plan(allowance: Mapping[str, int], observed: Observed) -> tuple[int | None, str]:
    """The month's allowance of every kind (``Limits.month``), or one estimated from the
    organization (spec §8: Splash, 2,000 per access point; an organization without access
    points: Compass, 10 per contact), and where it came from."""
    if ALL in allowance:
        return allowance[ALL], f"{allowance[ALL]:,} a month (Limits.month)"
    if observed.hotspots:
        n = observed.hotspots * SPLASH_PER_ACCESS_POINT
        return n, (
            f"estimated {n:,}: {observed.hotspots:,} access points x {SPLASH_PER_ACCESS_POINT:,} "
            "(Splash; give the real one with --allowance)"
        )
    if observed.contacts:
        n = observed.contacts * COMPASS_PER_CONTACT
        return n, (
            f"estimated {n:,}: {observed.contacts:,} contacts x {COMPASS_PER_CONTACT} "
            "(Compass; give the real one with --allowance)"
        )
    return None, "unknown"


def _costs(c: Cadence, o: Observed, lookback: float) -> dict[str, int]:
    """Objects a month of each kind at cadence ``c`` (see the module docstring)."""
    month = DAYS_A_MONTH * DAY
    reads = {"audited": 3, "reread": 2, "delayed": 1, "off": 1}[c.late if lookback else "off"]
    changes = o.contact_changes_per_day
    if changes is None:
        changes = o.contacts * ASSUMED_CONTACT_CHANGES
    per_day = DAY / c.refresh
    if o.hotspot_filter:  # a change is met by the rest of its day's refreshes, and one more
        hotspot_reads = o.hotspot_changes_per_day * (per_day / 2 + 1) * DAYS_A_MONTH
    else:  # the whole list at each refresh
        hotspot_reads = o.hotspots * per_day * DAYS_A_MONTH
    return {
        "events": round(o.events_per_day * DAYS_A_MONTH * reads),
        "contacts": round(changes * DAYS_A_MONTH + o.contacts * month / c.reconcile),
        "hotspots": round(hotspot_reads + o.hotspots * month / c.hotspots_reconcile),
        "segments": round(o.segments * month / c.segments),
    }


def _insist(c: Cadence, insisted: Insisted, late_ok: bool) -> Cadence:
    """Rung ``c`` with what the user set; ``late_ok``: whether events may be read late. A
    reconcile set runs at the next pass once due (0: at every pass): its cadence as it runs
    is at least a pass's (the refresh)."""
    late: Late = c.late
    if insisted.lookback == 0:
        late = "off"
    elif late == "delayed" and not late_ok:
        late = "reread"
    refresh = insisted.refresh or c.refresh
    reconcile, hotspots = c.reconcile, c.hotspots_reconcile
    if insisted.reconcile is not None:  # contacts and hotspots (``Syncer.sync_hotspots``)
        reconcile = hotspots = max(insisted.reconcile, refresh)
    return replace(
        c,
        late=late,
        refresh=refresh,
        segments=insisted.refresh or c.segments,
        reconcile=reconcile,
        hotspots_reconcile=hotspots,
    )


def _asked(lookback: float | None) -> bool:
    """Whether the user set the lookback (its default leaves it to the plan)."""
    return lookback not in (None, DEFAULT_LOOKBACK)


def _lookback(observed: Observed, insisted: Insisted, defaults: Insisted) -> float:
    """The lookback: the user's; else the default, lengthened to what the audit found late
    (up to ``MAX_LOOKBACK``: see the module docstring)."""
    if insisted.lookback is not None and _asked(insisted.lookback):
        return insisted.lookback
    base = insisted.lookback if insisted.lookback is not None else defaults.lookback or 0.0
    if not base or observed.late_by <= base:
        return base
    return lookback_setting(observed.late_by)[0]  # whole minutes, at most MAX_LOOKBACK


def plan_sync(
    observed: Observed,
    *,
    allowance: Mapping[str, int],
    share: float,
    insisted: Insisted,
    defaults: Insisted,
    current: int | None = None,
    resources: Collection[str] | None = None,
) -> SyncPlan:
    """The plan (see the module docstring); ``defaults`` fills what neither the plan nor
    the user sets (poll, settle, lookback); ``resources``: what the sync keeps (None: all;
    the others are budgeted nothing). ``current``: the rung of the plan in force; a
    more thorough one is taken only with :data:`HEADROOM` to spare, so that a plan on the
    edge of its share does not go up and down at every re-plan."""
    total, source = allowance_of_plan(allowance, observed)
    bound = None if total is None else math.floor(total * share)
    lookback = _lookback(observed, insisted, defaults)
    poll = insisted.poll if insisted.poll is not None else defaults.poll or POLL_INTERVAL
    base_settle = insisted.settle if insisted.settle is not None else defaults.settle or 0.0
    # events read a lookback late only where the user left the settle to the plan
    late_ok = insisted.settle is None and lookback > base_settle
    kept = frozenset(resources if resources is not None else _KINDS)
    chosen: SyncPlan | None = None
    for index, rung in enumerate(LADDER):
        c = _insist(rung, insisted, late_ok)
        costs = {k: n if k in kept else 0 for k, n in _costs(c, observed, lookback).items()}
        settle = max(base_settle, lookback) if c.late == "delayed" else base_settle
        candidate = SyncPlan(
            c, poll, settle, lookback, bound, source, costs, (), observed, index, kept
        )
        chosen = candidate
        up = current is not None and index < current
        if candidate.fits_with(1.0 - HEADROOM if up else 1.0):
            break
    assert chosen is not None
    return replace(chosen, warnings=tuple(_warnings(chosen, allowance, insisted)))


def _beyond(plan: SyncPlan) -> str:
    """How a plan that does not fit goes past the share: a month's, or this month's rest."""
    o, share, room = plan.observed, plan.share or 0, plan.room or 0.0
    if plan.projection > share:
        return f"more than the share ({share:,})"
    left = f"{human_count(room)} of {share:,}" if room > 0 else "nothing"
    return (
        f"{human_count(plan.rest)} for the {o.days_left or 0:.1f} days left, more than what is "
        f"left of the share this month ({left}: {human_count(o.spent)} objects counted for the "
        "key so far)"
    )


def _warnings(plan: SyncPlan, allowance: Mapping[str, int], insisted: Insisted) -> list[str]:
    """What does not fit, said at start (not at the month's end)."""
    out: list[str] = []
    if not plan.fits:
        asked = [
            name
            for name, value in (
                ("--lookback", _asked(insisted.lookback)),
                ("--settle", insisted.settle is not None),
                ("--refresh-every", insisted.refresh is not None),
                ("--reconcile-every", insisted.reconcile is not None),
            )
            if value
        ]
        what = f"with {', '.join(asked)} as set, the plan" if asked else "even the cheapest plan"
        parts = ", ".join(f"{k} {human_count(v)}" for k, v in plan.costs.items())
        out.append(
            f"{what} needs {human_count(plan.projection)} objects a month ({parts}), "
            f"{_beyond(plan)}: the month's allowance runs out before its end; "
            "raise --object-share, give the real --allowance, or buy an overage"
        )
    for kind, limit in allowance.items():
        if kind != ALL and plan.costs.get(kind, 0) > limit:
            out.append(
                f"{kind} need {human_count(plan.costs[kind])} objects a month, more than their "
                f"allowance ({limit:,})"
            )
    return out
