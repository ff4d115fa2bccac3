"""Suite-wide options and fixtures: ``--soak-long``, a shared ``redis_url``, and where the
tests' scaled clocks start (``TEST_CLOCK_START``)."""

from __future__ import annotations

import os
import socket
import time

import pytest
from hypothesis import settings

from asyncwifi._clock import ScaledClock

#: the property tests run the same examples on every run (CI's and the README's command): a
#: rare case found once by a random draw must not fail one run in many and pass the next.
#: ASYNCWIFI_EXPLORE=1 draws new examples (and keeps the failing ones) to look for more.
settings.register_profile("asyncwifi", derandomize=os.environ.get("ASYNCWIFI_EXPLORE") != "1")
settings.load_profile("asyncwifi")

REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379

#: where a test's scaled clock starts unless the test says: the first second of today (UTC).
#: Started at the real time instead, a clock at 400x crossed midnight within a test run late
#: in the evening, and a day's counts (quota, objects) were cut in two under the assertions
#: (a test of "the day's objects equal the month's" failed from 23:45 on). From the start
#: of the day a test has 24 clock hours before the day (or the month) turns, and the date is
#: still today's.
TEST_CLOCK_START = time.time() // 86_400 * 86_400 + 1.0
_scaled_init = ScaledClock.__init__


def _from_the_day_start(
    self: ScaledClock, speed: float = 1.0, *, start: float | None = None
) -> None:
    _scaled_init(self, speed, start=TEST_CLOCK_START if start is None else start)


ScaledClock.__init__ = _from_the_day_start  # type: ignore[method-assign]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--soak-long",
        action="store_true",
        default=False,
        help="run the long soak (a full scaled day, 15,000 requests) instead of the short one",
    )


def _redis_reachable() -> bool:
    try:
        with socket.create_connection((REDIS_HOST, REDIS_PORT), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.fixture
def redis_url() -> str:
    """``redis://127.0.0.1:6379``; skips when Redis is unreachable (fails instead when
    ASYNCWIFI_REQUIRE_REDIS=1)."""
    if not _redis_reachable():
        reason = f"Redis is not reachable on {REDIS_HOST}:{REDIS_PORT}"
        if os.environ.get("ASYNCWIFI_REQUIRE_REDIS") == "1":
            pytest.fail(reason + " (ASYNCWIFI_REQUIRE_REDIS=1)")
        pytest.skip(reason)
    return f"redis://{REDIS_HOST}:{REDIS_PORT}"
