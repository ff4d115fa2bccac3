"""The sync's object plan, sans-I/O (``asyncwifi.sync._plan``): from the share of the
month's allowance and what was observed, it picks the most thorough cadences whose month
fits, keeps what the user insisted on, says what each part costs, and warns at start (not
at the month's end) when a requirement cannot fit; bad budgets are refused before any
request."""

from __future__ import annotations

import math

import pytest

from asyncwifi import Limits
from asyncwifi.errors import ValidationError
from asyncwifi.sync import SyncOptions
from asyncwifi.sync._observed import WINDOW, Measured
from asyncwifi.sync._options import DEFAULTS
from asyncwifi.sync._plan import DAYS_A_MONTH, LADDER, Insisted, Observed, plan_sync

DAY = 86_400.0
#: the issue's reference organization: 10 access points, 2,000 contacts, 300 events a day
REFERENCE = Observed(
    events_per_day=300, contacts=2_000, contact_changes_per_day=20, hotspots=10, segments=6
)
#: and a busy one: 50 access points, 50,000 contacts, 5,000 events a day
BUSY = Observed(
    events_per_day=5_000, contacts=50_000, contact_changes_per_day=500, hotspots=50, segments=12
)


def plan(observed: Observed, *, allowance: object = None, share: float = 0.9, **insisted: float):
    return plan_sync(
        observed,
        allowance=Limits(month=allowance).allowance,  # type: ignore[arg-type]
        share=share,
        insisted=Insisted(**insisted),
        defaults=DEFAULTS,
    )


def test_the_reference_organization_fits_inside_its_splash_allowance() -> None:
    chosen = plan(REFERENCE)  # no allowance given: 10 access points x 2,000, estimated
    assert chosen.share == 18_000  # 0.9 of 20,000
    assert "estimated 20,000: 10 access points" in chosen.allowance
    assert chosen.projection <= chosen.share
    # every event read at most twice (here once, a lookback late: 2x does not fit)
    assert chosen.costs["events"] <= 2 * 300 * DAYS_A_MONTH + 1
    assert chosen.late == "delayed"
    assert chosen.settle == chosen.lookback == 600.0
    # contacts: the changes and a monthly reconcile; segments daily
    assert chosen.cadence.reconcile == 30 * DAY
    assert chosen.costs["contacts"] == round(20 * DAYS_A_MONTH + 2_000 * DAYS_A_MONTH / 30)
    assert chosen.costs["segments"] == round(6 * DAYS_A_MONTH)
    assert not chosen.warnings
    lines = chosen.describe()
    assert lines[0].startswith(f"object plan: {chosen.projection:,} objects a month")
    assert any("each read once, 10 min after its time" in line for line in lines)


def test_with_room_the_plan_buys_the_re_read_and_the_audit() -> None:
    roomy = plan(REFERENCE, allowance="50 access points")  # 100,000 a month
    assert roomy.late == "audited"
    assert roomy.audit
    assert roomy.settle == 60.0
    assert roomy.costs["events"] == round(300 * DAYS_A_MONTH * 3)
    assert roomy.cadence == LADDER[0]
    middle = plan(REFERENCE, allowance=25_000)
    assert middle.late == "reread"
    assert middle.projection <= 0.9 * 25_000


def test_a_busy_organization_is_warned_at_start_that_its_events_alone_do_not_fit() -> None:
    chosen = plan(BUSY)  # 50 access points: 100,000 a month, 90,000 to plan with
    assert chosen.share == 90_000
    assert chosen.cadence == LADDER[-1]  # the floor
    assert chosen.late == "delayed"  # events once
    assert chosen.costs["events"] == round(5_000 * DAYS_A_MONTH)
    (warning,) = chosen.warnings
    assert warning.startswith("even the cheapest plan needs 184,434 objects a month")
    assert "(events 152,200, contacts " in warning
    assert "raise --object-share, give the real --allowance, or buy an overage" in warning


def test_what_the_user_insisted_on_is_kept_and_named_when_it_does_not_fit() -> None:
    # a prompt read (settle 60 s) and a reconcile every day, on the reference organization
    chosen = plan(REFERENCE, settle=60.0, reconcile=DAY)
    assert chosen.settle == 60.0
    assert chosen.late in ("reread", "audited")  # not read a lookback late: settle was set
    assert chosen.cadence.reconcile == DAY
    (warning,) = chosen.warnings
    assert warning.startswith("with --settle, --reconcile-every as set, the plan needs")
    # a lookback of 0 (off): events read once, at once, and no re-read
    off = plan(REFERENCE, lookback=0.0)
    assert off.late == "off"
    assert off.costs["events"] == round(300 * DAYS_A_MONTH)
    # a per-kind allowance the events exceed is said too
    tight = plan(REFERENCE, allowance={"all": 100_000, "events": 5_000})
    assert any(w.startswith("events need") for w in tight.warnings)


def test_an_organization_without_access_points_is_planned_as_compass() -> None:
    compass = Observed(events_per_day=50, contacts=3_000, contact_changes_per_day=10)
    chosen = plan(compass)
    assert chosen.share == math.floor(0.9 * 30_000)
    assert "3,000 contacts x 10" in chosen.allowance
    unknown = plan(Observed(known=False))
    assert unknown.share is None
    assert unknown.allowance == "unknown"
    # said as what it is (no warning, and no cost of 0 objects: it is not known)
    assert unknown.warnings == ()
    head, *reads = unknown.describe()
    assert "nothing observed yet" in head
    assert "remade after it" in head
    assert "objects a month" not in head
    assert not any(r.endswith(": 0") for r in reads)


def test_what_was_measured_gives_the_rates_and_fades_after_a_week() -> None:
    m = Measured()
    m.add_events(2_100, 7 * DAY)  # a first run's week
    assert m.observed(contacts=0, hotspots=0, segments=0).events_per_day == pytest.approx(300)
    m.add_events(600, DAY)  # a busier day: the week before weighs six days now
    assert m.event_seconds == WINDOW
    assert m.observed(contacts=0, hotspots=0, segments=0).events_per_day == pytest.approx(
        (2_100 * 6 / 7 + 600) / 7
    )
    again = Measured.decode(m.encode())
    assert again == m
    assert Measured.decode("not json") == Measured()
    assert not Measured().known
    assert Measured().observed(contacts=5, hotspots=0, segments=0).contact_changes_per_day is None


@pytest.mark.parametrize("share", [0, -0.5, 1.5, math.nan, math.inf, True, "0.5"])
def test_a_bad_object_share_is_refused_before_anything_is_sent(share: object) -> None:
    with pytest.raises(ValidationError, match="object_share must be within"):
        SyncOptions(object_share=share)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value"),
    [("poll_interval", 0), ("refresh_every", -1), ("reconcile_every", math.nan), ("settle", -1)],
)
def test_bad_cadences_are_refused_before_anything_is_sent(field: str, value: float) -> None:
    with pytest.raises(ValidationError, match=field):
        SyncOptions(**{field: value})  # type: ignore[arg-type]
    assert SyncOptions(reconcile_every=0).reconcile_every == 0  # every pass
