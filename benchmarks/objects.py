"""Objects benchmark (spec §8: objects are a quota too): what a sync daemon at its defaults
spends in a month, against what its changes need (the floor) and the allowance, side by
side with the same daemon pinned to the cadences of before (a poll's lookback window every
30 s, contacts refreshed every 15 min and reconciled daily, hotspots and segments every
15 min), in one run.

Each organization runs ``Syncer.run_forever()`` (the daemon ``asyncwifi sync`` runs) against
the simulator for ``--days`` simulated days (a month by default) on a scaled clock shared
by both, from the 1st of a month; its first run reads the week before, as a new user's
does (scroll ids never lapse here: at this clock a minute lasts a few milliseconds). The
simulator's live feed adds events (a tenth of them appearing up to 8 minutes
late) and changes 1 % of the contacts a day; its counters say what it served, per kind.

* **reference**: 10 access points, 2,000 contacts, 300 events a day (the issue's);
* **busy**: 50 access points, 50,000 contacts, 5,000 events a day.

Printed per organization and kind: served in the run; the first run's one-time read (each
record once); the steady month (the rest, scaled to 30.44 days); what the changes and the
chosen reconciles need a month (the floor); their ratio; the allowance (Splash: 2,000 per
access point); the sync's own projection and how far it is from what was served. Targets:
the reference organization inside its allowance, events read at most 2x, every other kind
at most 1.5x its need, every event stored exactly once (late ones within the lookback
included), the projection within 10 %.

Run: ``python benchmarks/objects.py`` (about 6 minutes); ``--days 3 --only reference`` for
a quick one.
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
from asyncwifi.sync import Syncer, SyncOptions, open_destination
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


@dataclass(frozen=True)
class Org:
    name: str
    hotspots: int
    contacts: int
    events_per_day: int
    segments: int


ORGS = (Org("reference", 10, 2_000, 300, 6), Org("busy", 50, 50_000, 5_000, 12))


@dataclass
class Result:
    org: Org
    label: str
    days: float
    served: Counter[str]
    first: dict[str, int]
    plan: SyncPlan
    new_events: int
    changes: int
    stored_once: bool
    missing: int
    late: int
    real: float

    def steady(self, kind: str) -> float:
        """Objects of ``kind`` a month after the first run's read."""
        return max(0, self.served[kind] - self.first[kind]) * DAYS_A_MONTH / self.days

    def need(self, kind: str) -> float:
        """What ``kind`` needs a month: each change once, and the reconciles the plan chose
        (what the cadence reads whole: segments at each refresh)."""
        c, o = self.plan.cadence, self.org
        if kind == "events":
            return self.new_events * DAYS_A_MONTH / self.days
        if kind == "contacts":
            per_month = self.changes * DAYS_A_MONTH / self.days
            return per_month + o.contacts * DAYS_A_MONTH * DAY / c.reconcile
        if kind == "hotspots":
            return o.hotspots * DAYS_A_MONTH * DAY / c.hotspots_reconcile
        every = BEFORE["refresh_every"] if self.label == "before" else c.segments
        return o.segments * DAYS_A_MONTH * DAY / every


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
        feed = sim.start_feed(
            org.events_per_day / DAY, tick=600.0, late_share=0.1, late_by=480.0,
            contact_changes=org.contacts * 0.01 / DAY,
        )  # fmt: skip
        pinned: dict[str, Any] = BEFORE if label == "before" else {}
        # the clock runs fast: the first run's week is named, not "7 days before now"
        options = SyncOptions(since=datetime.fromtimestamp(MONTH - 7 * DAY, UTC), **pinned)
        with tempfile.TemporaryDirectory() as tmp:
            store = Recording(open_destination(f"sqlite:///{Path(tmp) / 'objects.db'}"))
            # before: no allowance to plan within (a huge one): every re-read is bought
            limits = Limits(month=10**9) if label == "before" else Limits()
            async with sim.client(limits=limits, scroll_window=1e9) as api:
                syncer = Syncer(api, store, options=options)
                task = asyncio.create_task(syncer.run_forever())
                end = MONTH + days * DAY
                while clock.now() < end and not task.done():
                    await asyncio.sleep(0.05)
                await sim.stop_feed()
                stop = clock.now()
                # the last events are read a lookback after their time: wait for them (a
                # minute of real time at most: what is still missing then was lost)
                ids, give_up = set(sim.data.event_ids()), time.monotonic() + 60
                while not task.done() and time.monotonic() < give_up:
                    if clock.now() > stop + 3_600 and set(store.events) >= ids:
                        break
                    await asyncio.sleep(0.05)
                syncer.stop()
                await asyncio.wait_for(task, timeout=120)
                plan = syncer.plan
                assert plan is not None
            await store.close()
        ids = sim.data.event_ids()
        written = Counter(store.events)
        return Result(
            org=org,
            label=label,
            days=(stop - MONTH) / DAY,
            served=Counter(sim.counters.objects_served),
            first={
                "events": week,
                "contacts": org.contacts,
                "hotspots": org.hotspots,
                "segments": org.segments,
            },
            plan=plan,
            new_events=len(ids) - week,
            changes=feed.changed,
            stored_once=max(written.values(), default=1) == 1 and set(written) == set(ids),
            missing=len(set(ids) - set(written)),
            late=feed.late,
            real=time.monotonic() - started,
        )


def report(r: Result) -> None:
    o, p = r.org, r.plan
    allowance = o.hotspots * 2_000
    print(
        f"\n{o.name} ({o.hotspots} access points, {o.contacts:,} contacts, "
        f"{o.events_per_day:,} events a day), {r.label}: {r.days:.1f} simulated days in "
        f"{r.real:.0f} s; plan: {p.late}, reconcile every {p.cadence.reconcile / DAY:g} d"
    )
    print(f"{'kind':10} {'served':>9} {'first run':>10} {'a month':>9} {'need':>9} {'ratio':>7}")
    total = 0.0
    for kind in KINDS:
        steady, need = r.steady(kind), r.need(kind)
        total += steady
        ratio = f"{steady / need:.2f}x" if need else "-"
        print(
            f"{kind:10} {r.served[kind]:>9,} {r.first[kind]:>10,} {steady:>9,.0f} "
            f"{need:>9,.0f} {ratio:>7}"
        )
    inside = "inside" if total <= allowance else "OVER"
    print(f"{'total':10} {sum(r.served.values()):>9,} {'':>10} {total:>9,.0f}   "
          f"allowance {allowance:,} ({inside}; {total / allowance:.0%})")  # fmt: skip
    # a reconcile rarer than the run cannot show in it: its monthly share is set apart
    c, month = p.cadence, DAYS_A_MONTH * DAY
    unseen = sum(
        size * month / every
        for size, every in ((o.contacts, c.reconcile), (o.hotspots, c.hotspots_reconcile))
        if every > r.days * DAY
    )
    seen = p.projection - unseen
    off = (seen - total) / total if total else 0.0
    print(
        f"the sync's projection {p.projection:,} a month ({seen:,.0f} without reconciles "
        f"rarer than the run): {off:+.1%} of what was served"
    )
    for warning in p.warnings:
        print(f"the plan warned at start: {warning}")
    events = r.steady("events") / r.need("events") if r.need("events") else 0.0
    print(
        f"events read {events:.2f}x each; {r.late:,} appeared late; stored exactly once: "
        f"{'yes' if r.stored_once else f'NO ({r.missing} missing)'}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--days",
        type=float,
        default=31.0,
        help="simulated days (>= 3; 31: a monthly reconcile shows)",
    )
    parser.add_argument("--speed", type=float, default=40_000.0, help="clock speed")
    parser.add_argument("--only", choices=[o.name for o in ORGS], default=None)
    args = parser.parse_args()
    print(load_line())
    print(f"a sync daemon at its defaults, {args.days:g} simulated days from {MONTH:.0f}")
    for org in ORGS:
        if args.only not in (None, org.name):
            continue
        labels = ("defaults", "before") if org.name == "reference" else ("defaults",)
        results = [await run(org, label, args.days, args.speed) for label in labels]
        for result in results:
            report(result)
        if len(results) == 2:
            now, before = (sum(r.steady(k) for k in KINDS) for r in results)
            print(f"defaults vs before: {now:,.0f} vs {before:,.0f} objects a month "
                  f"({before / now:.1f}x fewer)")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
