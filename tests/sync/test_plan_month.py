"""The object plan knows the month (issue 39): what the store counted this month for the
key is spent before the share is planned, and the rest of the month is planned with the
days left; the rate of new events follows a step within a day; rows marked deleted are
not costed; a reconcile insisted on (``0``: every pass) is costed as it runs; and a plan
is said when it changes, each of its warnings once (not at every re-plan, not three times
by the command)."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from asyncwifi import Limits, ScaledClock
from asyncwifi.cli import main
from asyncwifi.engine import open_destination
from asyncwifi.sync import Syncer, SyncOptions
from asyncwifi.sync._observed import Measured
from asyncwifi.sync._options import DEFAULTS
from asyncwifi.sync._plan import (
    DAYS_A_MONTH,
    HEADROOM,
    LADDER,
    Insisted,
    Observed,
    SyncPlan,
    plan_sync,
)
from asyncwifi.testing import Simulator
from asyncwifi.testing._api_contacts import add_contact
from asyncwifi.testing._data import DEFAULT_EVENTS_END, DEFAULT_EVENTS_START
from tests.sync.conftest import SPEED, sim_client
from tests.sync.test_object_plan import REFERENCE, plan

DAY = 86_400.0
SINCE = datetime.fromtimestamp(DEFAULT_EVENTS_START, UTC)
UNTIL = datetime.fromtimestamp(DEFAULT_EVENTS_END, UTC)


def with_month(spent: float, days_left: float) -> Observed:
    return replace(REFERENCE, spent=spent, days_left=days_left)


def test_what_the_month_spent_is_spent_before_the_share_is_planned() -> None:
    # the reference organization fits one read per event a month (11,882 of 18,000)
    whole = plan(REFERENCE)
    assert whole.late == "delayed"
    # a first read and a backfill counted 7,000 this month, 29.4 days left: the rest of
    # the month at one read per event (11,476) no longer fits in the 11,000 left
    spent = plan(with_month(7_000, 29.4))
    assert whole.projection * 29.4 / DAYS_A_MONTH > 11_000
    assert spent.rest == round(spent.projection * 29.4 / DAYS_A_MONTH)
    assert spent.cadence != whole.cadence  # cheaper: the floor
    assert spent.rest <= 18_000 - 7_000
    assert not spent.warnings
    # 17,000 spent with 20 days left: nothing fits; said with what is left
    (warning,) = plan(with_month(17_000, 20.0)).warnings
    assert warning.startswith("even the cheapest plan needs")
    assert "for the 20.0 days left, more than what is left of the share this month (1,000 of " in (
        warning
    )
    assert "17,000 objects counted for the key so far" in warning
    # nothing spent, the month's last day: still no more than the share a month buys
    last = plan(with_month(0, 1.0))
    assert last.cadence == whole.cadence
    assert "this month: 0 counted for the key so far" in last.describe()[-1]


async def test_the_daemon_plans_with_what_the_store_counted_this_month(tmp_path: Path) -> None:
    async with sim_client(events=2_000, contacts=100, hotspots=3) as (sim, api):
        # another program of the key read every contact and event this month
        async for _ in api.contacts.list():
            pass
        async for _ in api.events.list(date_start=SINCE, date_end=UNTIL, size=1_000):
            pass
        counted = sum((await api.scheduler.objects()).values())
        assert counted >= 2_100
        store = open_destination(f"sqlite:///{tmp_path / 'month.db'}")
        syncer = Syncer(api, store, options=SyncOptions(since=SINCE, until=UNTIL))
        try:
            await store.open()
            made = await syncer.make_plan()
            now = sim.clock.now()
            month_end = datetime(*(_next_month(datetime.fromtimestamp(now, UTC))), tzinfo=UTC)
            assert made.observed.spent == counted
            assert made.observed.days_left == pytest.approx((month_end.timestamp() - now) / DAY)
        finally:
            await store.close()


def _next_month(t: datetime) -> tuple[int, int, int]:
    return (t.year + t.month // 12, t.month % 12 + 1, 1)


def test_a_plan_on_the_edge_of_its_share_does_not_go_up_and_down() -> None:
    # the reference organization with 6,000 counted and 29 days left: one read a lookback
    # late fits by a few hundred objects; from the floor it is not taken (10 % to spare)
    edge = with_month(6_000, 29.0)
    fresh = plan(edge)
    assert fresh.late == "delayed"
    assert fresh.rest > (1 - HEADROOM) * (18_000 - 6_000)
    kept = plan_sync(edge, allowance=Limits().allowance, share=0.9, insisted=Insisted(),
                     defaults=DEFAULTS, current=len(LADDER) - 1)  # fmt: skip
    assert kept.rung == len(LADDER) - 1
    # and one rung down is taken at once: what does not fit never stays
    down = plan_sync(edge, allowance=Limits().allowance, share=0.9, insisted=Insisted(),
                     defaults=DEFAULTS, current=0)  # fmt: skip
    assert down.rung == fresh.rung


def test_the_rate_of_new_events_follows_a_tenfold_step_within_a_day() -> None:
    m = Measured()
    m.add_events(2_100, 7 * DAY)  # a first run's week: 300 a day
    seen = m.observed(contacts=0, hotspots=0, segments=0)
    assert seen.events_per_day == pytest.approx(300)
    m.add_events(750, DAY / 4)  # six hours at 3,000 a day
    assert m.observed(contacts=0, hotspots=0, segments=0).events_per_day > 900
    m.add_events(2_250, 3 * DAY / 4)  # the day: the week's average would say 686
    assert m.observed(contacts=0, hotspots=0, segments=0).events_per_day == pytest.approx(3_000)
    again = Measured.decode(m.encode())
    assert again == m
    for _ in range(3):  # and on, while the week's average catches up (1,843 after 4 days)
        m.add_events(3_000, DAY)
        assert m.observed(contacts=0, hotspots=0, segments=0).events_per_day == pytest.approx(3_000)
    for _ in range(7):  # until the week agrees: the week's rate again
        m.add_events(3_000, DAY)
    assert not m.following
    # a day a little busier than the week (not a step) does not move it by itself
    calm = Measured()
    calm.add_events(2_100, 7 * DAY)
    calm.add_events(400, DAY)
    assert calm.observed(contacts=0, hotspots=0, segments=0).events_per_day < 320


async def test_rows_marked_deleted_are_not_costed(db_url: str) -> None:
    async with sim_client(events=100, contacts=40) as (sim, api):
        store = open_destination(db_url)
        syncer = Syncer(api, store, options=SyncOptions(since=SINCE, until=UNTIL))
        try:
            await syncer.run_once()
            for contact in list(sim.data.contacts)[:10]:
                assert sim.data.delete_contact(contact["cid"])
            add_contact(sim.data, sim.clock.now(), firstName="Newcomer")
            await syncer.sync_contacts(reconcile=True)
            assert len(await store.ids("contacts", deleted=True)) == 10
            assert await store.count("contacts") == 31
            made = await syncer.make_plan()
            assert made.observed.contacts == 31
        finally:
            await store.close()


def test_a_reconcile_at_every_pass_is_costed_at_every_pass() -> None:
    every_pass = plan(REFERENCE, reconcile=0.0)
    c = every_pass.cadence
    assert c.reconcile == c.refresh == c.hotspots_reconcile  # a pass each refresh
    month = DAYS_A_MONTH * DAY
    assert every_pass.costs["contacts"] == round(20 * DAYS_A_MONTH + 2_000 * month / c.refresh)
    assert every_pass.costs["contacts"] > 100_000
    (warning,) = every_pass.warnings
    assert warning.startswith("with --reconcile-every as set, the plan needs")
    # one set longer than a pass is kept as set
    weekly = plan(REFERENCE, reconcile=7 * DAY)
    assert weekly.cadence.reconcile == weekly.cadence.hotspots_reconcile == 7 * DAY


async def test_a_plan_is_said_when_it_changes_not_at_every_re_plan(tmp_path: Path) -> None:
    # 300 events a day the week before, an allowance they exceed: every plan warns, and
    # its figures move a little at each pass (what the month spent, a few more events)
    start = datetime(2026, 11, 10, tzinfo=UTC).timestamp()
    async with Simulator(
        clock=ScaledClock(SPEED, start=start), events=2_100, events_start=start - 7 * DAY,
        events_end=start, contacts=50, rate_limit_mode="off",
    ) as sim, sim.client(limits=Limits(month=5_000)) as api:  # fmt: skip
        store = open_destination(f"sqlite:///{tmp_path / 'said.db'}")
        said: list[SyncPlan] = []
        options = SyncOptions(since=datetime.fromtimestamp(start - 7 * DAY, UTC))
        syncer = Syncer(api, store, options=options, on_plan=said.append)
        made: list[SyncPlan] = []
        try:
            for _ in range(4):
                await syncer.run_once()
                made.append(syncer.plan)  # type: ignore[arg-type]
                sim.data.add_events(3)
                await sim.clock.sleep(600)
        finally:
            await store.close()
    # the first plan (nothing observed) and the one the first pass measured: no more
    assert [p.late for p in said] == ["audited", "delayed"], [p.describe() for p in said]
    assert said[-1].warnings[0].startswith("even the cheapest plan needs")
    assert len({p.warnings for p in made}) > 1  # its figures moved
    assert {p.gist for p in made} == {said[-1].gist}


def test_the_command_says_each_warning_of_its_plan_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the README's command: before, each warning came three times, one "sync:   warning:"
    db = tmp_path / "x.db"
    code = main(["--simulate", "sync", "--to", f"sqlite:///{db}", "--since", "2026-01-01",
                 "--until", "2026-01-08", "--once"])  # fmt: skip
    assert code == 0
    err = capsys.readouterr().err
    warnings = re.findall(r"^asyncwifi: warning: (.*)$", err, re.M)
    assert warnings, err
    for warning in warnings:
        text = warning.removeprefix("object plan: ")
        assert err.count(text) == 1, (text, err)
    assert "sync:   warning" not in err
