"""Suite-wide options and fixtures: ``--soak-long`` and a shared ``redis_url``."""

from __future__ import annotations

import os
import socket

import pytest
from hypothesis import settings

#: the property tests run the same examples on every run (CI's and the README's command): a
#: rare case found once by a random draw must not fail one run in many and pass the next.
#: ASYNCWIFI_EXPLORE=1 draws new examples (and keeps the failing ones) to look for more.
settings.register_profile("asyncwifi", derandomize=os.environ.get("ASYNCWIFI_EXPLORE") != "1")
settings.load_profile("asyncwifi")

REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379


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
