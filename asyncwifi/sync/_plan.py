"""The sync's object plan (spec §8: objects are a quota too): from its share of the month's
allowance and what it knows of the organization, how often to re-read for late events,
refresh hotspots and segments and reconcile contacts, so that the month stays inside it.

Sans-I/O: :func:`plan_sync` takes the allowance, the share, what was observed
(:class:`Observed`: the rate of new events and contact changes, the sizes of the contact,
hotspot and segment sets) and what the user insisted on (a ``SyncOptions`` field set to a
number), and returns a :class:`SyncPlan`: the cadences, what each costs a month, the
projection, and warnings for requirements that cannot fit.

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
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from asyncwifi._instant import human_duration
from asyncwifi.ratelimit._volume import ALL, COMPASS_PER_CONTACT, SPLASH_PER_ACCESS_POINT
from asyncwifi.sync._lookback import DEFAULT_LOOKBACK

__all__ = [
    "DAYS_A_MONTH",
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
    #: objects a month other users of the key spend (webhooks, other programs)
    others_a_month: float = 0.0
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

    @property
    def projection(self) -> int:
        """Objects a month at these cadences."""
        return sum(self.costs.values())

    @property
    def late(self) -> Late:
        return self.cadence.late

    @property
    def audit(self) -> bool:
        return self.cadence.late == "audited"

    def describe(self) -> list[str]:
        """The plan in a few lines: what it chose, what that costs, what does not fit."""
        c, share = self.cadence, self.share
        fits = "no allowance known" if share is None else f"share {share:,}"
        head = f"object plan: {human_count(self.projection)} objects a month ({fits}"
        head += f"; allowance: {self.allowance})"
        lookback, settle = human_duration(self.lookback), human_duration(self.settle)
        late = {
            "audited": f"each read 3x: on time, {lookback} later, and an audit",
            "reread": f"each read 2x: on time and once more {lookback} later",
            "delayed": f"each read once, {settle} after its time",
            "off": "each read once; late events are not looked for (lookback 0)",
        }[c.late]
        kinds = ("events", "contacts", "hotspots", "segments")
        cost = {k: human_count(self.costs.get(k, 0)) for k in kinds}
        refresh = human_duration(c.refresh)
        lines = [
            head,
            f"  events: {late}: {cost['events']}",
            f"  contacts: changes every {refresh}, all of them every "
            f"{human_duration(c.reconcile)}: {cost['contacts']}",
            f"  hotspots: changes every {refresh}, all every "
            f"{human_duration(c.hotspots_reconcile)}: {cost['hotspots']}",
            f"  segments: every {human_duration(c.segments)}: {cost['segments']}",
        ]
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
    """Rung ``c`` with what the user set; ``late_ok``: whether events may be read late."""
    late: Late = c.late
    if insisted.lookback == 0:
        late = "off"
    elif late == "delayed" and not late_ok:
        late = "reread"
    return replace(
        c,
        late=late,
        refresh=insisted.refresh or c.refresh,
        segments=insisted.refresh or c.segments,
        reconcile=insisted.reconcile or c.reconcile,
    )


def plan_sync(
    observed: Observed,
    *,
    allowance: Mapping[str, int],
    share: float,
    insisted: Insisted,
    defaults: Insisted,
) -> SyncPlan:
    """The plan (see the module docstring); ``defaults`` fills what neither the plan nor
    the user sets (poll, settle, lookback)."""
    total, source = allowance_of_plan(allowance, observed)
    bound = None if total is None else math.floor(total * share)
    room = None if bound is None else bound - observed.others_a_month
    lookback = insisted.lookback if insisted.lookback is not None else defaults.lookback or 0.0
    poll = insisted.poll if insisted.poll is not None else defaults.poll or 60.0
    base_settle = insisted.settle if insisted.settle is not None else defaults.settle or 0.0
    # events read a lookback late only where the user left the settle to the plan
    late_ok = insisted.settle is None and lookback > base_settle
    chosen: SyncPlan | None = None
    for rung in LADDER:
        c = _insist(rung, insisted, late_ok)
        costs = _costs(c, observed, lookback)
        settle = max(base_settle, lookback) if c.late == "delayed" else base_settle
        candidate = SyncPlan(c, poll, settle, lookback, bound, source, costs, (), observed)
        chosen = candidate
        if room is None or candidate.projection <= room:
            break
    assert chosen is not None
    return replace(chosen, warnings=tuple(_warnings(chosen, room, allowance, insisted)))


def _warnings(
    plan: SyncPlan, room: float | None, allowance: Mapping[str, int], insisted: Insisted
) -> list[str]:
    """What does not fit, said at start (not at the month's end)."""
    out: list[str] = []
    if room is not None and plan.projection > room:
        asked = [
            name
            for name, value in (
                ("--lookback", insisted.lookback not in (None, DEFAULT_LOOKBACK)),
                ("--settle", insisted.settle is not None),
                ("--refresh-every", insisted.refresh is not None),
                ("--reconcile-every", insisted.reconcile is not None),
            )
            if value
        ]
        what = f"with {', '.join(asked)} as set, the plan" if asked else "even the cheapest plan"
        parts = ", ".join(f"{k} {human_count(v)}" for k, v in plan.costs.items())
        out.append(
            f"{what} needs {human_count(plan.projection)} objects a month ({parts}), more than "
            f"the share ({human_count(room)}): the month's allowance runs out before its end; "
            "raise --object-share, give the real --allowance, or buy an overage"
        )
    for kind, limit in allowance.items():
        if kind != ALL and plan.costs.get(kind, 0) > limit:
            out.append(
                f"{kind} need {human_count(plan.costs[kind])} objects a month, more than their "
                f"allowance ({limit:,})"
            )
    if not plan.observed.known:
        out.append("nothing observed yet: this plan is remade after the first pass")
    return out
