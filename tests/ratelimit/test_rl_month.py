"""The month's object allowance on a virtual clock (spec §8): counts roll over at 00:00 UTC,
a spent allowance waits for (or raises until) the 1st of the next month, and only the kind
it names is held back. No sleeping: the virtual clock jumps to each timer."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from asyncwifi._clock import ScaledClock
from asyncwifi._instant import period_end, utc_period
from asyncwifi.errors import QuotaExhaustedError, ValidationError
from asyncwifi.ratelimit import Limits, MemoryStore, Scheduler
from asyncwifi.testing import Simulator
from tests._virtualclock import VirtualClock
from tests.client._support import client_for


def at(*ymdhms: int) -> float:
    return datetime(*ymdhms, tzinfo=UTC).timestamp()  # type: ignore[misc]


NEW_YEAR = at(2027, 1, 1)
EVE = at(2026, 12, 31, 22, 0)  # two hours before the month ends


def run(clock: VirtualClock, fn: Callable[[], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        return await fn()

    return clock.run(main())


async def take(s: Scheduler, tag: str, out: list[tuple[str, float]]) -> None:
    """A request for ``tag``, as the pipeline sends one: its object reserved first."""
    hold = await s.object_gate.reserve(tag, 1)
    async with s.slot(tag=tag) as permit:
        out.append((tag, permit.sent_at))
    s.object_gate.release(hold)


@pytest.mark.parametrize(
    ("t", "month", "day", "month_end", "day_end"),
    [
        (at(2026, 12, 31, 23, 59, 59), "2026-12", "2026-12-31", NEW_YEAR, NEW_YEAR),
        (NEW_YEAR, "2027-01", "2027-01-01", at(2027, 2, 1), at(2027, 1, 2)),
        (at(2028, 2, 28, 12), "2028-02", "2028-02-28", at(2028, 3, 1), at(2028, 2, 29)),
        (at(2028, 2, 29, 23, 59, 59), "2028-02", "2028-02-29", at(2028, 3, 1), at(2028, 3, 1)),
    ],
)
def test_utc_periods_and_their_ends(
    t: float, month: str, day: str, month_end: float, day_end: float
) -> None:
    assert (utc_period(t, "month"), utc_period(t, "day")) == (month, day)
    assert (period_end(t, "month"), period_end(t, "day")) == (month_end, day_end)
    assert period_end(t - 0.001, "day") <= period_end(t, "day")


def test_counts_roll_over_at_midnight_and_on_the_first_december_to_january() -> None:
    clock = VirtualClock(at(2026, 12, 30, 23, 59, 59))

    async def main() -> None:
        s = Scheduler(clock=clock)
        await s.count_objects("events", 5)
        await clock.sleep(1.0)  # 2026-12-31 00:00 UTC: a new day, the same month
        counts = await s.count_objects("contacts", 2)
        assert (counts.month, counts.day) == ("2026-12", "2026-12-31")
        assert await s.objects() == {"events": 5, "contacts": 2}
        assert await s.objects(period="day") == {"contacts": 2}
        assert await s.objects("all") == 7
        await clock.sleep(NEW_YEAR - clock.now() - 0.001)  # a millisecond before the year
        assert await s.objects("events") == 5
        await clock.sleep(0.001)
        assert clock.now() == NEW_YEAR
        assert await s.objects() == {}
        assert await s.objects("all", period="day") == 0
        await s.count_objects("events", 1)
        assert await s.objects() == {"events": 1}
        assert s.quota.volume.month == "2027-01"
        await s.aclose()

    run(clock, main)


def test_a_spent_month_waits_until_exactly_the_first_then_goes_on() -> None:
    clock = VirtualClock(EVE)
    order: list[tuple[str, float]] = []

    async def main() -> None:
        s = Scheduler(Limits(month={"events": 100, "contacts": 1_000}), clock=clock)
        await s.count_objects("events", 99)
        await take(s, "events", order)  # one short of the allowance: it goes
        await s.count_objects("events", 1)
        held = [asyncio.create_task(take(s, "events", order)) for _ in range(3)]
        await asyncio.sleep(0)
        # parked on the month, they hold up neither a login nor another kind
        await take(s, "login", order)
        await take(s, "contacts", order)
        await clock.sleep(60.0)
        await take(s, "contacts", order)
        assert len(order) == 4
        await asyncio.gather(*held)
        await s.aclose()

    run(clock, main)
    assert order[:4] == [
        ("events", EVE),
        ("login", EVE),
        ("contacts", EVE),
        ("contacts", EVE + 60.0),
    ]
    assert order[4:] == [("events", NEW_YEAR)] * 3  # not a microsecond before


def test_an_allowance_of_every_kind_holds_every_kind_but_not_the_login() -> None:
    clock = VirtualClock(EVE)
    order: list[tuple[str, float]] = []

    async def main() -> None:
        s = Scheduler(Limits(month=10), clock=clock)
        await s.count_objects("hotspots", 4)
        await s.count_objects("segments", 6)
        kinds = ("events", "contacts", "hotspots", "segments")
        held = [asyncio.create_task(take(s, k, order)) for k in kinds]
        await asyncio.sleep(0)
        await take(s, "login", order)
        await take(s, "logout", order)
        await take(s, "other", order)
        await asyncio.gather(*held)
        await s.aclose()

    run(clock, main)
    assert order[:3] == [("login", EVE), ("logout", EVE), ("other", EVE)]
    assert order[3:] == [(k, NEW_YEAR) for k in ("events", "contacts", "hotspots", "segments")]


@pytest.mark.parametrize(
    ("month", "kind", "limit", "figure", "which"),
    [
        ({"events": 100}, "events", "month:events", "100", "for events"),
        (100, "segments", "month", "100", "for every kind of object"),
        ("2 access points", "hotspots", "month", "4,000", "for every kind of object"),
        ({"contacts": "10 contacts"}, "contacts", "month:contacts", "100", "for contacts"),
    ],
)
def test_raise_names_the_allowance_its_figure_what_was_exchanged_and_the_reset(
    month: Any, kind: str, limit: str, figure: str, which: str
) -> None:
    clock = VirtualClock(EVE)

    async def main() -> None:
        s = Scheduler(Limits(month=month, on_exhausted="raise"), clock=clock)
        allowance = next(iter(s.limits.allowance.values()))
        await s.count_objects(kind, allowance + 7)
        with pytest.raises(QuotaExhaustedError) as spent:
            await s.object_gate.reserve(kind, 1)
        err = spent.value
        assert err.limit == limit
        assert err.reset_at == NEW_YEAR
        assert f"month's object allowance ({figure} {which}; {allowance + 7:,} exchanged)" in (
            err.message
        )
        assert "2027-01-01T00:00:00Z (in 7200 s)" in err.message
        assert "nothing was sent" in err.message
        assert s.in_flight == 0
        s.release(await s.acquire(tag="login"))  # not an object: it goes
        await s.aclose()

    run(clock, main)


def test_a_per_kind_allowance_holds_back_only_that_kind() -> None:
    clock = VirtualClock(EVE)

    async def main() -> None:
        limits = Limits(month={"events": 100, "contacts": 50}, on_exhausted="raise")
        s = Scheduler(limits, clock=clock)
        await s.count_objects("events", 100)
        await s.count_objects("contacts", 49)
        await s.count_objects("hotspots", 10_000)  # no allowance of its own
        for kind in ("contacts", "hotspots", "segments", "other"):
            s.object_gate.release(await s.object_gate.reserve(kind, 1))
        with pytest.raises(QuotaExhaustedError, match="100 for events"):
            await s.object_gate.reserve("events", 1)
        await s.count_objects("contacts", 1)
        with pytest.raises(QuotaExhaustedError, match="50 for contacts"):
            await s.object_gate.reserve("contacts", 1)
        snap = s.quota.volume
        assert (snap.remaining("events"), snap.remaining("contacts")) == (0, 0)
        assert snap.remaining("hotspots") is None
        await s.aclose()

    run(clock, main)


@pytest.mark.parametrize(("max_wait", "waits"), [(3_600.0, False), (7_200.0, True)])
def test_max_wait_shorter_than_the_rest_of_the_month_raises(max_wait: float, waits: bool) -> None:
    clock = VirtualClock(EVE)

    async def main() -> float | QuotaExhaustedError:
        s = Scheduler(Limits(month=5, max_wait=max_wait), clock=clock)
        await s.count_objects("events", 5)
        try:
            await s.object_gate.reserve("events", 1)
            return clock.now()
        except QuotaExhaustedError as err:
            return err
        finally:
            await s.aclose()

    got = run(clock, main)
    if waits:
        assert got == NEW_YEAR
    else:
        assert isinstance(got, QuotaExhaustedError)
        assert (got.reset_at, got.limit) == (NEW_YEAR, "month")


def test_the_snapshot_shows_the_month_and_the_day_against_the_allowance() -> None:
    clock = VirtualClock(at(2026, 11, 29, 23, 0))

    async def main() -> None:
        store = MemoryStore()
        s = Scheduler(Limits(month={"all": 1_000, "events": 600}), clock=clock, store=store)
        other = Scheduler(Limits(), clock=clock, store=store)  # one key, another client
        empty = s.quota.volume
        assert (empty.month, empty.used, empty.remaining(), empty.remaining("events")) == (
            "2026-11", 0, 1_000, 600
        )  # fmt: skip
        await s.count_objects("events", 400)
        await clock.sleep(3_600.0)  # a new UTC day
        await other.count_objects("contacts", 50)
        await s.count_objects("events", 100)
        snap = s.quota.volume
        assert snap.month == "2026-11"
        assert snap.this_month == {"events": 500, "contacts": 50}
        assert snap.today == {"events": 100, "contacts": 50}
        assert snap.allowance == {"all": 1_000, "events": 600}
        assert snap.used == 550
        assert (snap.remaining(), snap.remaining("events"), snap.remaining("contacts")) == (
            450, 100, None
        )  # fmt: skip
        assert snap.resets_at == at(2026, 12, 1)
        await s.count_objects("events", 200)  # past the allowance: none remain, not less
        assert s.quota.volume.remaining("events") == 0
        await clock.sleep(at(2026, 12, 1) - clock.now())
        rolled = s.quota.volume
        assert (rolled.month, rolled.this_month, rolled.remaining("events")) == ("2026-12", {}, 600)
        assert rolled.resets_at == NEW_YEAR
        await s.aclose()
        await other.aclose()

    run(clock, main)


@pytest.mark.parametrize(
    "month",
    [
        0,
        -1,
        math.nan,
        math.inf,
        True,
        1.5,
        "ten",
        "",
        "0 contacts",
        "-5",
        "5 apples",
        "9" * 5_000,
        {"teleports": 5},
        {"events": 0},
        {"events": "lots"},
        {"all": False},
        {1: 5},
        [100],
    ],
)
def test_a_bad_allowance_is_refused_before_any_request(month: Any) -> None:
    with pytest.raises(ValidationError, match=r"Limits\.month"):
        Limits(month=month)


@pytest.mark.parametrize(
    ("month", "allowance"),
    [
        (None, {}),
        (20_000, {"all": 20_000}),
        (2_000.0, {"all": 2_000}),
        ("10 access points", {"all": 20_000}),
        ("1 AP", {"all": 2_000}),
        ("2000 contacts", {"all": 20_000}),
        ("1,000", {"all": 1_000}),
        ({"all": "3 aps", "events": 500}, {"all": 6_000, "events": 500}),
    ],
)
def test_good_allowances_in_numbers_and_in_the_subscriptions_terms(
    month: Any, allowance: dict[str, int]
) -> None:
    assert Limits(month=month).allowance == allowance


async def test_a_client_built_with_a_bad_allowance_sends_nothing() -> None:
    async with Simulator(clock=ScaledClock(100)) as sim:
        for month in (0, "ten", {"events": -3}):
            with pytest.raises(ValidationError):
                client_for(sim, limits=Limits(month=month))
        assert sim.counters.requests == 0


def test_count_objects_refuses_a_bad_count_or_kind() -> None:
    clock = VirtualClock(EVE)

    async def main() -> None:
        s = Scheduler(clock=clock)
        for kind, n in (("events", -1), ("events", 1.5), ("", 1), (None, 1), ("events", True)):
            with pytest.raises(ValidationError):
                await s.count_objects(kind, n)  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            await s.objects(period="week")  # type: ignore[call-overload]
        assert await s.objects() == {}
        await s.aclose()

    run(clock, main)
