"""Suite-wide options and fixtures: ``--soak-long`` and a shared ``redis_url``."""

from __future__ import annotations

import os
import socket

import pytest

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
