"""The limits a user writes: what is refused (and the message that says why), and the
margin that scales with the period but never beyond the production margin."""

from __future__ import annotations

import math
import re

import pytest

from asyncwifi.errors import ValidationError
from asyncwifi.ratelimit import Limit, Limits


def exactly(message: str) -> str:
    return f"^{re.escape(message)}$"


@pytest.mark.parametrize("count", [0, -1, True, 2.5, 2.0, "3", None])
def test_a_count_that_is_not_a_whole_number_from_1_is_refused(count: object) -> None:
    with pytest.raises(
        ValidationError,
        match=exactly(f"Limit count must be a finite positive integer, got {count!r}"),
    ):
        Limit(count, 60.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("period", [True, "60", None])
def test_a_period_that_is_not_a_number_is_refused(period: object) -> None:
    with pytest.raises(
        ValidationError,
        match=exactly(f"Limit period must be a finite positive number, got {period!r}"),
    ):
        Limit(5, period)  # type: ignore[arg-type]


@pytest.mark.parametrize("period", [0, 0.0, -1.0, math.inf, -math.inf, math.nan])
def test_a_period_that_is_not_finite_and_positive_is_refused(period: float) -> None:
    with pytest.raises(
        ValidationError,
        match=exactly(f"Limit period must be a finite positive number, got {period!r}"),
    ):
        Limit(5, period)


def test_the_smallest_limits_are_accepted_and_the_period_is_a_float() -> None:
    limit = Limit(1, 2)
    assert limit.count == 1
    assert limit.period == 2.0
    assert isinstance(limit.period, float)
    assert Limit(1, 0.001).period == 0.001


@pytest.mark.parametrize("field", ["minute_margin", "day_margin"])
@pytest.mark.parametrize("value", [True, "1", None])
def test_a_margin_that_is_not_a_number_is_refused_by_name(field: str, value: object) -> None:
    with pytest.raises(
        ValidationError,
        match=exactly(f"{field} must be a finite non-negative number, got {value!r}"),
    ):
        Limits(**{field: value})  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["minute_margin", "day_margin"])
@pytest.mark.parametrize("value", [-0.5, math.inf, math.nan])
def test_a_margin_that_is_negative_or_not_finite_is_refused_by_name(
    field: str, value: float
) -> None:
    with pytest.raises(
        ValidationError,
        match=exactly(f"{field} must be a finite non-negative number, got {value!r}"),
    ):
        Limits(**{field: value})  # type: ignore[arg-type]


def test_a_zero_margin_is_accepted() -> None:
    limits = Limits(minute_margin=0, day_margin=0)
    assert [(w.name, w.span) for w in limits.windows()] == [("minute", 60.0), ("day", 86_400.0)]


@pytest.mark.parametrize("field", ["minute", "day"])
def test_a_limit_that_is_not_a_limit_is_refused_by_name(field: str) -> None:
    with pytest.raises(
        ValidationError, match=exactly(f"Limits.{field} must be a Limit or None, got (60, 60.0)")
    ):
        Limits(**{field: (60, 60.0)})  # type: ignore[arg-type]


def test_the_margin_scales_down_with_the_period_but_never_up() -> None:
    limits = Limits(minute=Limit(10, 120.0), day=Limit(100, 2 * 86_400.0))
    minute, day = limits.windows()
    assert (minute.name, minute.margin, minute.span) == ("minute", 1.0, 121.0)
    assert (day.name, day.margin, day.span) == ("day", 60.0, 2 * 86_400.0 + 60.0)
    fast = Limits(minute=Limit(60, 0.6), day=Limit(15_000, 864.0)).windows()
    assert [w.margin for w in fast] == pytest.approx([0.01, 0.6], rel=1e-12)
