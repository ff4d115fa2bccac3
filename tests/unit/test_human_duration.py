"""One format for a span of time in every line the package prints (issue 34): the progress
line, the dry run, the sync's object plan and `fleet status` said "2 d 3 h", "36 h" and
"2.1d" for spans of one kind."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from asyncwifi._instant import human_duration


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (None, "?"),
        (math.inf, "never"),
        (-3.0, "0 s"),
        (12.4, "12 s"),
        (200, "3 min 20 s"),
        (900, "15 min"),
        (3_600, "1 h"),
        (4 * 3_600 + 300, "4 h 05 min"),
        (86_400, "1 d"),
        (2 * 86_400 + 3 * 3_600, "2 d 3 h"),
        (30 * 86_400, "30 d"),
    ],
)
def test_a_span_is_said_one_way(seconds: float | None, said: str) -> None:
    assert human_duration(seconds) == said


def test_fleet_status_says_a_lag_the_same_way() -> None:
    pytest.importorskip("temporalio")
    from asyncwifi.cli._temporal import status_line
    from asyncwifi.fleet._workflow import OrganizationStatus

    ran = OrganizationStatus(
        "org", passes=1, last_success="2026-01-02T00:00:00Z", newest_event="2025-12-30T21:00:00Z"
    )
    assert "lag 2 d 3 h" in status_line(ran, now=datetime(2026, 1, 2, tzinfo=UTC))
