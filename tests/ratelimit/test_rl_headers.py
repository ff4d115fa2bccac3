"""Limit validation, margin scaling, and tolerant header parsing."""

from __future__ import annotations

import pytest
from multidict import CIMultiDict, CIMultiDictProxy

from asyncwifi.errors import ValidationError
from asyncwifi.ratelimit import Limit, Limits
from asyncwifi.ratelimit._headers import ObjectCounts, RateLimitHeaders


class TestLimit:
    def test_valid_limit_is_frozen_and_hashable(self) -> None:
        a, b = Limit(60, 60), Limit(60, 60.0)
        assert a == b
        assert hash(a) == hash(b)
        assert isinstance(a.period, float)
        with pytest.raises(AttributeError):
            a.count = 5  # type: ignore[misc]

    @pytest.mark.parametrize(
        ("count", "period"),
        [
            (0, 60.0),
            (-1, 60.0),
            (1.5, 60.0),
            (True, 60.0),
            (60, 0),
            (60, -1.0),
            (60, float("inf")),
            (60, float("nan")),
            (60, "60"),
        ],
    )
    def test_invalid_limit_is_rejected(self, count: object, period: object) -> None:
        with pytest.raises(ValidationError):
            Limit(count, period)  # type: ignore[arg-type]

    def test_default_limits_are_the_documented_ones(self) -> None:
        lim = Limits()
        assert lim.minute == Limit(60, 60.0)
        assert lim.day == Limit(15_000, 86_400.0)
        spans = {w.name: w.span for w in lim.windows()}
        assert spans == {"minute": 61.0, "day": 86_460.0}

    def test_margins_scale_with_the_period(self) -> None:
        lim = Limits(minute=Limit(60, 0.6), day=Limit(15_000, 864.0))
        margins = {w.name: w.margin for w in lim.windows()}
        assert margins["minute"] == pytest.approx(0.01)
        assert margins["day"] == pytest.approx(0.6)
        # a longer period than the reference keeps the configured margin
        assert Limits(minute=Limit(60, 120.0)).windows()[0].margin == 1.0

    def test_negative_margin_rejected_and_none_disables_a_limit(self) -> None:
        with pytest.raises(ValidationError):
            Limits(minute_margin=-1.0)
        assert [w.name for w in Limits(day=None).windows()] == ["minute"]


class TestHeaders:
    def test_parses_spec_headers_in_any_case(self) -> None:
        h = RateLimitHeaders.from_headers(
            {
                "x-ratelimit-limit-minute": "60",
                "X-RATELIMIT-REMAINING-MINUTE": "7",
                "X-Ratelimit-Limit-Day": "15000",
                "X-RateLimit-Remaining-Day": "14000",
                "X-RateLimit-Limit-Hotspots-Day": "100",
                "x-ratelimit-remaining-hotspots-day": "0",
                "RateLimit-Limit": "60",
                "RateLimit-Remaining": "7",
                "RateLimit-Reset": "13",
                "Content-Type": "application/json",
            }
        )
        assert h.limits == {"minute": 60, "day": 15000}
        assert h.remaining == {"minute": 7, "day": 14000}
        assert h.objects == {"hotspots": ObjectCounts(100, 0)}
        assert (h.limit, h.remaining_any, h.reset) == (60, 7, 13.0)
        assert h.reset_for("minute") == 13.0
        assert h.reset_for("day") is None
        assert h.spent_objects() == ["hotspots"]
        assert h.spent_periods() == []

    def test_aiohttp_multidict_and_duplicates_read_conservatively(self) -> None:
        md = CIMultiDict(
            [
                ("X-RateLimit-Remaining-Minute", "9"),
                ("x-ratelimit-remaining-minute", "3"),
                ("Retry-After", "5"),
                ("retry-after", "20"),
            ]
        )
        h = RateLimitHeaders.from_headers(CIMultiDictProxy(md))
        assert h.remaining == {"minute": 3}
        assert h.retry_after == 20.0

    @pytest.mark.parametrize("value", ["", "abc", "1e999", "nan", "--3", "0x10", "\x00", "🙂"])
    def test_garbage_values_are_ignored(self, value: str) -> None:
        h = RateLimitHeaders.from_headers(
            {
                "X-RateLimit-Remaining-Minute": value,
                "Retry-After": value,
                "RateLimit-Reset": value,
                "X-RateLimit-Limit-Day": value,
            }
        )
        assert h.empty
        assert h.delay(0.0) is None

    def test_negative_remaining_reads_as_zero_and_lists_are_cut(self) -> None:
        h = RateLimitHeaders.from_headers(
            {"X-RateLimit-Remaining-Minute": "-4", "RateLimit-Limit": "60, 60;w=60"}
        )
        assert h.remaining == {"minute": 0}
        assert h.limit == 60

    def test_unknown_periods_and_names_are_ignored(self) -> None:
        h = RateLimitHeaders.from_headers(
            {
                "X-RateLimit-Remaining-Fortnight": "3",
                "X-RateLimit-Other-Minute": "3",
                "X-RateLimit-Remaining-Hotspots-Minute": "1",
                "X-RateLimit-Remaining-Hour": "40",
            }
        )
        assert h.remaining == {"hour": 40}
        assert h.objects == {}

    def test_retry_after_http_date(self) -> None:
        h = RateLimitHeaders.from_headers({"Retry-After": "Wed, 15 Nov 2023 00:00:00 GMT"})
        assert h.retry_after is None
        assert h.retry_after_at == 1_700_006_400.0
        assert h.delay(1_700_006_000.0) == 400.0
        assert h.delay(1_700_007_000.0) == 0.0

    def test_retry_after_wins_over_ratelimit_reset(self) -> None:
        h = RateLimitHeaders.from_headers({"Retry-After": "30", "RateLimit-Reset": "10"})
        assert h.delay(0.0) == 30.0
        assert RateLimitHeaders.from_headers({"RateLimit-Reset": "10"}).delay(0.0) == 10.0

    def test_reset_for_the_day_without_ratelimit_limit(self) -> None:
        h = RateLimitHeaders.from_headers(
            {
                "X-RateLimit-Remaining-Minute": "5",
                "X-RateLimit-Remaining-Day": "0",
                "RateLimit-Reset": "3600",
            }
        )
        assert h.reset_for("day") == 3600.0
        assert h.reset_for("minute") is None

    def test_none_and_empty(self) -> None:
        assert RateLimitHeaders.from_headers(None).empty
        assert RateLimitHeaders.from_headers({}).empty
        assert not RateLimitHeaders.from_headers({"Retry-After": "1"}).empty
