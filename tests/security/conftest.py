"""Fixtures of the security tests: every log record, at DEBUG, of the SDK and libraries."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest

from tests.security._scan import log_text


@pytest.fixture
def sdk_logs_propagate() -> Iterator[None]:
    """The SDK's loggers reach caplog even if an in-process CLI run turned propagation off."""
    sdk = logging.getLogger("asyncwifi")
    saved = sdk.propagate, sdk.level, list(sdk.handlers)
    sdk.propagate = True
    for handler in saved[2]:
        sdk.removeHandler(handler)
    yield
    sdk.propagate, level, handlers = saved
    sdk.setLevel(level)
    for handler in handlers:
        sdk.addHandler(handler)


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture, sdk_logs_propagate: None) -> Callable[[], str]:
    """Capture every logger (asyncwifi, redis, asyncpg, asyncio...) at DEBUG; call the
    result for the text of all records so far, tracebacks included."""
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="asyncwifi")
    return lambda: log_text(caplog)
