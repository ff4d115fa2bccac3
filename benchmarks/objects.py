"""Objects benchmark (spec §8: objects are a quota too): what a sync daemon at its defaults
spends in a month, against what its changes need (the floor) and the allowance, on shapes
of organization the plan must follow; the reference organization also side by side with
the same daemon pinned to the cadences of before (a poll's lookback window every 30 s,
contacts refreshed every 15 min and reconciled daily, hotspots and segments every 15 min),
in one run.

Each organization runs ``Syncer.run_forever()`` (the daemon ``asyncwifi sync`` runs) against
the simulator for ``--days`` simulated days (a month by default) on a scaled clock, from
the 1st of a month; its first run reads the week before, as a new user's does (scroll ids
never lapse here: at this clock a minute lasts a few milliseconds). The simulator's live
feed adds events (a tenth of them appearing up to 8 minutes late: inside the lookback)
and changes contacts; its counters say what it served, per kind.

* **reference**: 10 access points, 2,000 contacts, 300 events a day (the issue's); also
  run "selected" (issue 41: ``--resources events --event-types visit,login``): 0 contact,
  hotspot and segment objects;
* **busy**: 50 access points, 50,000 contacts, 5,000 events a day;
* **compass**: no access point, 3,000 contacts (Compass: 10 objects a contact), 200 a day;
* **step**: the reference organization at 30 events a day until day 8, then tenfold;
* **churn**: the reference organization whose contacts change 20 % a day;
* **later**: the reference organization, 2 % of whose events appear 15 to 20 minutes
  after their own time (later than the default lookback, 10 minutes).

Printed per organization: per kind, served in the measured window (from the end of day 1,
or a day after the step, once the first read is over) scaled to a month, and what the
changes and the chosen reconciles need; the allowance (Splash: 2,000 per access point;
Compass: 10 per contact) and the share of it served; the sync's projection against what
was served (a reconcile rarer than the window set apart), within 10 % or the plan's
warning that says why not; and whether every event was stored exactly once (late ones
included).

Run: ``python benchmarks/objects.py`` (about 15 minutes on two cores); ``--days 5 --only
reference`` for a quick one. ``--only`` takes several names.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from asyncwifi import Limits, ScaledClock
from asyncwifi.engine import open_destination
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.sync._plan import DAYS_A_MONTH, SyncPlan
from asyncwifi.testing import Simulator
from benchmarks._common import load_line
from tests.sync.conftest import Recording

DAY = 86_400.0
MONTH = datetime(2026, 11, 1, tzinfo=UTC).timestamp()
KINDS = ("events", "contacts", "hotspots", "segments")
#: the cadences of before, pinned (the plan keeps what is set): 3 reads of each event
#: (forward, lookback, audit) stand in for the window re-read every 30 s of before, which
#: read each event about 9.6 times; so "before" here is a floor of what it spent
BEFORE = {"settle": 60.0, "refresh_every": 900.0, "reconcile_every": DAY}
#: how late the "later" organization's late events are (the default lookback: 600 s)
BEYOND = (900.0, 1_200.0)
#: the "selected" run (issue 41): events of two types only, nothing else kept
SELECTED = {"resources": "events", "event_types": "visit,login"}


@dataclass(frozen=True)
class Org:
    name: str
    hotspots: int
    contacts: int
    events_per_day: int
    segments: int
    #: contacts changed a day, a share of them
    churn: float = 0.01
    #: the day the rate of new events steps tenfold (None: it does not)
    step: float | None = None
    #: a share of the events appearing later than the lookback (``BEYOND``)
    beyond: float = 0.0
    #: how much slower its clock runs than ``--speed`` (a big first read must not last
    #: days of the clock while this machine writes it)
    slower: float = 1.0

    @property
    def allowance(self) -> int:
        """Spec §8: 2,000 objects a month per access point; without any, 10 per contact."""
        return self.hotspots * 2_000 if self.hotspots else self.contacts * 10


ORGS = (
    Org("reference", 10, 2_000, 300, 6),
    Org("busy", 50, 50_000, 5_000, 12, slower=5.0),
    Org("compass", 0, 3_000, 200, 6),
    Org("step", 10, 2_000, 30, 6, step=8.0),
    Org("churn", 10, 2_000, 300, 6, churn=0.2),
    Org("later", 10, 2_000, 300, 6, beyond=0.02),
)


@dataclass
class Result:
    org: Org
    label: str
    #: the measured window: its start and length (days from the 1st), what was served and
    #: what changed in it (new events, contact changes)
    start: float
    days: float
    served: Counter[str]
    #: served over the whole run (the first read included)
    whole: Counter[str]
    new_events: int
    changes: int
    plan: SyncPlan
    said: list[SyncPlan]
    stored_once: bool
    missing: int
    twice: int
    late: int
    beyond: int
    real: float

    def month(self, kind: str) -> float:
        """Objects of ``kind`` a month, from the window."""
        return self.served[kind] * DAYS_A_MONTH / self.days

    def need(self, kind: str) -> float:
        """What ``kind`` needs a month: each change once, and the reconciles the plan chose
        that the window can show (what the cadence reads whole: segments at each refresh)."""
        c, o = self.plan.cadence, self.org

        def whole(size: int, every: float) -> float:
            return size * DAYS_A_MONTH * DAY / every if every <= self.run * DAY else 0.0

        if kind == "events":
            return self.new_events * DAYS_A_MONTH / self.days
        if self.label == "selected":
            return 0.0  # not kept: never read
        if kind == "contacts":
            return self.changes * DAYS_A_MONTH / self.days + whole(o.contacts, c.reconcile)
        if kind == "hotspots":
            return whole(o.hotspots, c.hotspots_reconcile)
        every = BEFORE["refresh_every"] if self.label == "before" else c.segments
        return o.segments * DAYS_A_MONTH * DAY / every

    def unseen(self) -> float:
        """The plan's objects a month for reconciles the window cannot show (see ``run``)."""
        c, o, month = self.plan.cadence, self.org, DAYS_A_MONTH * DAY
        return sum(
            size * month / every
            for size, every in ((o.contacts, c.reconcile), (o.hotspots, c.hotspots_reconcile))
            if every > self.run * DAY
        )

    @property
    def run(self) -> float:
        """The longest reconcile the window shows: the first read (day 0) is the first
        reconcile, so one every 30 days shows in a window of days 1 to 31."""
        return self.days + 1.0


class Late:
    """Events appearing later than the lookback: every 10 clock minutes, a share of what the
    feed added meanwhile, dated ``BEYOND`` before now."""

    def __init__(self, sim: Simulator, share: float) -> None:
        self.sim, self.share, self.added, self._due = sim, share, 0, 0.0

    async def run(self, rate: Any) -> None:
        while True:
            await self.sim.clock.sleep(600.0)
            self._due += rate() * 600.0 * self.share
            n, self._due = int(self._due), self._due - int(self._due)
            if n:
                now = self.sim.clock.now()
                self.sim.data.add_events(n, at=now - BEYOND[1], until=now - BEYOND[0])
                self.added += n


async def run(org: Org, label: str, days: float, speed: float) -> Result:
    started = time.monotonic()
    clock = ScaledClock(speed, start=MONTH + 60)
    week = 7 * org.events_per_day
    async with Simulator(
        clock=clock,
        contacts=org.contacts,
        hotspots=org.hotspots,
        segments=org.segments,
        events=week,
        events_start=MONTH - 7 * DAY,
        events_end=MONTH,
        scroll_ttl=1e9,  # a clock this fast leaves a few ms between scroll requests
    ) as sim:
        rate = org.events_per_day / DAY

        def feed_at(per_second: float) -> Any:
            return sim.start_feed(
                per_second, tick=600.0, late_share=0.1, late_by=480.0,
                contact_changes=org.contacts * org.churn / DAY,
            )  # fmt: skip

        feed = feed_at(rate)
        late_task = None
        beyond = Late(sim, org.beyond)
        if org.beyond:
            late_task = asyncio.create_task(beyond.run(lambda: rate))
        pinned: dict[str, Any] = {"before": BEFORE, "selected": SELECTED}.get(label, {})
        # the clock runs fast: the first run's week is named, not "7 days before now"
        options = SyncOptions(since=datetime.fromtimestamp(MONTH - 7 * DAY, UTC), **pinned)
        said: list[SyncPlan] = []
        kept = SELECTED["event_types"].split(",") if label == "selected" else None
        late = changed = 0
        with tempfile.TemporaryDirectory() as tmp:
            store = Recording(open_destination(f"sqlite:///{Path(tmp) / 'objects.db'}"))
            # before: no allowance to plan within (a huge one): every re-read is bought
            limits = Limits(month=10**9) if label == "before" else Limits()
            async with sim.client(limits=limits, scroll_window=1e9) as api:
                syncer = Syncer(api, store, options=options, on_plan=said.append)
                task = asyncio.create_task(syncer.run_forever())
                window = 1.0 if org.step is None else org.step + 1.0
                end = MONTH + days * DAY
                base: tuple[Counter[str], int, int] | None = None
                while clock.now() < end and not task.done():
                    day = (clock.now() - MONTH) / DAY
                    stepped = rate > org.events_per_day / DAY
                    if org.step is not None and day >= org.step and not stepped:
                        late, changed = late + feed.late, changed + feed.changed
                        await sim.stop_feed()
                        rate *= 10
                        feed = feed_at(rate)
                    # from a day in (or after the step), once the first read is over (the
                    # busy organization's lasts past the first day at this speed)
                    if base is None and day >= window and syncer.stats.passes >= 2:
                        events = len(sim.data.event_ids(types=kept))
                        base = (Counter(sim.counters.objects_served), events,
                                changed + feed.changed)  # fmt: skip
                        window = day
                    await asyncio.sleep(0.05)
                late, changed = late + feed.late, changed + feed.changed
                await sim.stop_feed()
                if late_task is not None:
                    late_task.cancel()
                    await asyncio.gather(late_task, return_exceptions=True)
                stop = clock.now()
                # the last events are read a lookback after their time (the lookback may
                # have grown: a day at most): wait for them (a minute of real time at most:
                # what is still missing then was lost)
                ids, give_up = set(sim.data.event_ids(types=kept)), time.monotonic() + 60
                while not task.done() and time.monotonic() < give_up:
                    if set(store.events) >= ids:
                        break
                    await asyncio.sleep(0.05)
                served_end = Counter(sim.counters.objects_served)
                syncer.stop()
                await asyncio.wait_for(task, timeout=120)
                plan = syncer.plan
                assert plan is not None
            await store.close()
        assert base is not None, "the run ended before its measured window began"
        ids_all = sim.data.event_ids(types=kept)
        written = Counter(store.events)
        return Result(
            org=org,
            label=label,
            start=window,
            days=(stop - MONTH) / DAY - window,
            served=served_end - base[0],
            whole=served_end,
            new_events=len(ids_all) - base[1],
            changes=changed - base[2],
            plan=plan,
            said=said,
            stored_once=max(written.values(), default=1) == 1 and set(written) == set(ids_all),
            missing=len(set(ids_all) - set(written)),
            twice=sum(1 for n in written.values() if n > 1),
            late=late,
            beyond=beyond.added,
            real=time.monotonic() - started,
        )


def report(r: Result) -> None:
    o, p = r.org, r.plan
    allowance = o.allowance
    step = f", tenfold from day {o.step:g}" if o.step is not None else ""
    print(
        f"\n{o.name} ({o.hotspots} access points, {o.contacts:,} contacts, "
        f"{o.events_per_day:,} events a day{step}"
        f", {o.churn:.0%} of the contacts changed a day), {r.label}: measured from day "
        f"{r.start:.1f} for {r.days:.1f} simulated days, in {r.real:.0f} s; plan: {p.late}, "
        f"lookback {p.lookback / 60:g} min, reconcile every {p.cadence.reconcile / DAY:g} d"
    )
    print(f"{'kind':10} {'served':>9} {'a month':>9} {'need':>9} {'ratio':>7}")
    total = 0.0
    for kind in KINDS:
        month, need = r.month(kind), r.need(kind)
        total += month
        ratio = f"{month / need:.2f}x" if need else "-"
        print(f"{kind:10} {r.served[kind]:>9,} {month:>9,.0f} {need:>9,.0f} {ratio:>7}")
    inside = "inside" if total <= allowance else "OVER"
    print(f"{'total':10} {sum(r.served.values()):>9,} {total:>9,.0f}   "
          f"allowance {allowance:,}: {total / allowance:.0%} of it ({inside})")  # fmt: skip
    # a reconcile rarer than the window cannot show in it: its monthly share is set apart
    seen = p.projection - r.unseen()
    off = (seen - total) / total if total else 0.0
    verdict = "within 10 %" if abs(off) <= 0.10 else "NOT within 10 %"
    print(
        f"projection {p.projection:,} a month ({seen:,.0f} without reconciles rarer than the "
        f"window): {off:+.1%} of what was served, {verdict}"
    )
    warned = list(dict.fromkeys(w for plan in r.said for w in plan.warnings))
    for warning in warned:
        print(f"  the plan warned: {warning}")
    if abs(off) > 0.10 and not warned:
        print("  and the plan did not warn")
    if r.label == "selected":
        spent = ", ".join(f"{k} {r.whole[k]:,}" for k in KINDS)
        print(f"the whole run (first read included), objects served: {spent}")
    events = r.month("events") / r.need("events") if r.need("events") else 0.0
    once = "yes" if r.stored_once else f"NO ({r.missing} missing, {r.twice} twice)"
    print(
        f"events read {events:.2f}x each; {r.late:,} appeared late inside the lookback, "
        f"{r.beyond:,} later than it; every event stored exactly once: {once}; "
        f"{len(r.said)} plans said"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--days", type=float, default=31.0,
        help="simulated days (>= 3; 31: a monthly reconcile shows; the step needs 10)",
    )  # fmt: skip
    parser.add_argument("--speed", type=float, default=40_000.0, help="clock speed")
    parser.add_argument("--only", nargs="*", choices=[o.name for o in ORGS], default=None)
    parser.add_argument("--no-before", action="store_true", help="skip the pinned cadences")
    args = parser.parse_args()
    print(load_line())
    print(f"a sync daemon at its defaults, {args.days:g} simulated days from {MONTH:.0f}")
    for org in ORGS:
        if args.only and org.name not in args.only:
            continue
        if org.step is not None and args.days < org.step + 2:
            print(f"\n{org.name}: skipped (needs --days {org.step + 2:g} at least)")
            continue
        before = org.name == "reference" and not args.no_before
        labels = ("defaults", "before", "selected") if before else ("defaults",)
        if org.name == "reference" and args.no_before:
            labels = ("defaults", "selected")
        speed = args.speed / org.slower
        results = [await run(org, label, args.days, speed) for label in labels]
        for result in results:
            report(result)
        if len(results) >= 2:
            now, was = (sum(r.month(k) for k in KINDS) for r in results[:2])
            print(f"defaults vs before: {now:,.0f} vs {was:,.0f} objects a month "
                  f"({was / now:.1f}x fewer)")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
