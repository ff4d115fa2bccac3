"""Suite-wide options and fixtures: ``--soak-long``, a shared ``redis_url``, and the order
the tests run in (the slow modules first)."""

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


#: modules whose tests take seconds each (measured with ``--durations=0``): they run first,
#: so that the two workers end on short tests instead of one waiting for the other's long one
SLOW_FIRST = (
    "tests/fleet/",
    "tests/soak/",
    "tests/sync/test_object_budget.py",
    "tests/sync/test_late_events.py",
    "tests/sync/test_sync_failures.py",
    "tests/sync/test_follow.py",
    "tests/simulator/test_openapi.py",
    "tests/contract/",
    "tests/cli/test_careless_operator.py",
    "tests/cli/test_cli_simulate.py",
    "tests/client/test_scroll_shapes.py",
    "tests/ratelimit/test_rl_gateway_models.py",
    "tests/backfill/test_backfill_gateways.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow modules first, in their order; the rest as collected (a stable sort)."""
    items.sort(key=lambda item: not item.nodeid.startswith(SLOW_FIRST))


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
