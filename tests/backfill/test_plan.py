"""The plan: slices that tile the range with no gap and no overlap, and honest estimates."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncwifi._instant import format_instant, parse_duration, parse_instant
from asyncwifi.backfill._plan import (
    estimate,
    even_slice_size,
    plan_slices,
    requests_time,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_slices_tile_the_range_and_ask_for_disjoint_inclusive_windows() -> None:
    slices = plan_slices(T0, T0 + timedelta(days=2, hours=5), timedelta(days=1))
    assert [(s.date_start, s.date_end) for s in slices] == [
        ("2026-01-01T00:00:00.000Z", "2026-01-01T23:59:59.999Z"),
        ("2026-01-02T00:00:00.000Z", "2026-01-02T23:59:59.999Z"),
        ("2026-01-03T00:00:00.000Z", "2026-01-03T04:59:59.999Z"),
    ]
    assert [s.index for s in slices] == [0, 1, 2]


@settings(max_examples=60, deadline=None)
@given(
    start_ms=st.integers(0, 10**11),
    whole=st.integers(0, 40),
    extra_ms=st.integers(1, 10**9),
    size_s=st.integers(1, 10**6),
)
def test_every_millisecond_of_the_range_is_in_exactly_one_slice(
    start_ms: int, whole: int, extra_ms: int, size_s: int
) -> None:
    since = T0 + timedelta(milliseconds=start_ms)
    until = since + timedelta(seconds=whole * size_s, milliseconds=extra_ms % (size_s * 1000) + 1)
    slices = plan_slices(since, until, timedelta(seconds=size_s))
    assert slices[0].date_start == format_instant(since)
    assert slices[-1].date_end == format_instant(until - timedelta(milliseconds=1))
    for a, b in itertools.pairwise(slices):
        # a's inclusive end is the millisecond just before b's inclusive start
        end = datetime.fromisoformat(a.date_end)
        start = datetime.fromisoformat(b.date_start)
        assert start - end == timedelta(milliseconds=1)


def test_an_empty_or_reversed_range_is_refused() -> None:
    with pytest.raises(ValueError, match="before"):
        plan_slices(T0, T0, timedelta(days=1))
    with pytest.raises(ValueError, match="before"):
        plan_slices(T0 + timedelta(days=1), T0, timedelta(days=1))
    with pytest.raises(ValueError, match="zone"):
        plan_slices(T0.replace(tzinfo=None), T0 + timedelta(days=1), timedelta(days=1))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-01", "2026-01-01T00:00:00.000Z"),
        ("2026-01-01T10:30", "2026-01-01T10:30:00.000Z"),
        ("2026-01-01 10:30:00Z", "2026-01-01T10:30:00.000Z"),
        ("2026-01-01T12:30:00+02:00", "2026-01-01T10:30:00.000Z"),
        ("2026-01-01T10:30:00.123456Z", "2026-01-01T10:30:00.123Z"),
        ("0999-06-01", "0999-06-01T00:00:00.000Z"),  # four digits, as ISO 8601 wants
    ],
)
def test_command_line_instants_without_a_zone_are_utc(text: str, expected: str) -> None:
    assert format_instant(parse_instant(text)) == expected


@pytest.mark.parametrize("text", ["yesterday", "2026-13-01", "2026-01-01T25:00", ""])
def test_an_unparseable_instant_says_what_is_expected(text: str) -> None:
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_instant(text)


@pytest.mark.parametrize(
    ("text", "seconds"), [("1d", 86_400), ("6h", 21_600), ("1h30m", 5_400), ("2w", 1_209_600)]
)
def test_slice_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "1x", "d1", "0s", "1d foo"])
def test_bad_slice_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_estimate_counts_pages_the_proof_of_a_full_last_page_and_logins() -> None:
    slices = plan_slices(T0, T0 + timedelta(days=7), timedelta(days=1))
    plan = estimate(slices, events_per_day=25_000, page_size=10_000)
    assert plan.events == 175_000
    assert plan.page_requests == 7 * 3  # 2 full pages and a short one that ends each slice
    assert plan.logins == 1
    assert plan.requests == 22
    assert plan.seconds_at_rate == pytest.approx(22.0)
    assert plan.days_of_quota == pytest.approx(22 / 15_000)
    # a last page exactly full needs one request proving the end (spec §3)
    exact = estimate(slices, events_per_day=20_000, page_size=10_000)
    assert exact.page_requests == 7 * 3


def test_long_slices_approach_the_floor() -> None:
    since, until = T0, T0 + timedelta(days=181)
    size = even_slice_size(since, until, 4)
    slices = plan_slices(since, until, size)
    assert len(slices) == 4
    assert slices[-1].end == until
    plan = estimate(slices, events_per_day=10_000, page_size=10_000)
    floor = -(-1_810_000 // 10_000) + 4
    assert plan.page_requests <= floor
    daily = estimate(
        plan_slices(since, until, timedelta(days=1)), events_per_day=10_000, page_size=10_000
    )
    assert daily.page_requests == 2 * 181  # a full page and the proof of its end, per day


def test_estimate_of_a_job_bigger_than_a_day_of_quota() -> None:
    slices = plan_slices(T0, T0 + timedelta(days=365), timedelta(days=1))
    plan = estimate(slices, events_per_day=500_000, page_size=10_000)
    assert plan.page_requests == 365 * 51  # 50 full pages and the proof of the end
    # 18,615 pages: two days of quota, so two logins
    assert plan.logins == 2
    assert plan.days_of_quota == pytest.approx(18_617 / 15_000)
    # a whole day for the first 15,000, then 3,617 at one a second
    assert plan.seconds_total == pytest.approx(86_400 + 3_617)


def test_requests_time_uses_what_is_left_today() -> None:
    kw = {"minute_count": 60, "minute_period": 60.0, "day_count": 15_000, "day_period": 86_400.0}
    assert requests_time(0, **kw) == 0
    assert requests_time(120, **kw) == pytest.approx(120)
    assert requests_time(120, day_remaining=20, day_reset_in=3_600, **kw) == pytest.approx(3_700)
