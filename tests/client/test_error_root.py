"""One exception root: every public constructor and entry point given bad input raises an
``AsyncWifiError`` subclass (never a bare ValueError, RuntimeError or TypeError)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from asyncwifi import Client, Limit, Limits, MemoryStore, RetryPolicy, ScaledClock
from asyncwifi._instant import parse_duration
from asyncwifi.backfill._plan import estimate, plan_slices
from asyncwifi.errors import AsyncWifiError, ClientStateError, ConfigurationError
from asyncwifi.testing import Faults, Simulator, make_webhook_payload
from asyncwifi.webhooks import Dispatcher, MemoryDeduplicator, Receiver, Spool
from asyncwifi.webhooks._app import create_app
from asyncwifi.webhooks._sinks import load_handler, secrets_from_env

URL = "https://api.example.test"
EARLIER, LATER = datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 2, tzinfo=UTC)
DAY = timedelta(days=1)
NAIVE = datetime(2024, 1, 1)


def _client(**options: Any) -> Client:
    return Client("key", "secret", base_url=URL, **options)


def _two_limits(store: MemoryStore) -> None:
    _client(rate_store=store, limits=Limits(minute=Limit(60, 60)))
    _client(rate_store=store, limits=Limits(minute=Limit(30, 60)))


BAD_CALLS: dict[str, Callable[[], object]] = {
    "Client: empty key": lambda: Client("", "secret", base_url=URL),
    "Client: secret not a string": lambda: Client("key", 42, base_url=URL),  # type: ignore[arg-type]
    "Client: no base_url": lambda: Client("key", "secret", base_url=""),
    "Client: ftp base_url": lambda: Client("key", "secret", base_url="ftp://x"),
    "Client: plain http": lambda: Client("key", "secret", base_url="http://x"),
    "Limits: on_exhausted": lambda: _client(limits=Limits(on_exhausted="sleep")),  # type: ignore[arg-type]
    "Client: organization": lambda: _client(organization="a\nb"),
    "Client: scroll_window": lambda: _client(scroll_window=0),
    "Client: scroll_window text": lambda: _client(scroll_window="x"),
    "Client: base_url not a string": lambda: Client("key", "secret", base_url=5),  # type: ignore[arg-type]
    "Client: limits not Limits": lambda: _client(limits=5),
    "Client: retry not a RetryPolicy": lambda: _client(retry=5),
    "Client: negative timeout": lambda: _client(timeout=-1),
    "Client: timeout text": lambda: _client(timeout="x"),
    "Limits: no connections": lambda: _client(limits=Limits(max_connections=0)),
    "Limits: in-flight as float": lambda: _client(limits=Limits(max_in_flight=1.5)),  # type: ignore[arg-type]
    "Limits: max_wait": lambda: _client(limits=Limits(max_wait=-1)),
    "Client: a hook of no kind": lambda: _client(hooks={"sent": print}),  # type: ignore[dict-item]
    "Client: a hook not callable": lambda: _client(hooks={"request": [1]}),  # type: ignore[list-item]
    "RetryPolicy: max_attempts 0": lambda: RetryPolicy(max_attempts=0),
    "RetryPolicy: max_attempts text": lambda: RetryPolicy(max_attempts="3"),  # type: ignore[arg-type]
    "RetryPolicy: negative backoff": lambda: RetryPolicy(backoff_base=-1),
    "RetryPolicy: NaN elapsed": lambda: RetryPolicy(max_elapsed=float("nan")),
    "RetryPolicy: rate-limit wait text": lambda: RetryPolicy(max_rate_limit_wait="1"),  # type: ignore[arg-type]
    "RetryPolicy: max_rate_limited -1": lambda: RetryPolicy(max_rate_limited=-1),
    "RetryPolicy: an endless elapsed": lambda: RetryPolicy(max_elapsed=float("inf")),
    "RetryPolicy: an endless rate-limit wait": lambda: RetryPolicy(
        max_rate_limit_wait=float("inf")
    ),
    "Limit: count 0": lambda: Limit(0, 60),
    "Limit: period 0": lambda: Limit(10, 0),
    "Limits: not a Limit": lambda: Limits(minute=5),  # type: ignore[arg-type]
    "MemoryStore: shared by two sets of limits": lambda: _two_limits(MemoryStore()),
    "ScaledClock: speed 0": lambda: ScaledClock(0),
    "ScaledClock: speed text": lambda: ScaledClock("fast"),  # type: ignore[arg-type]
    "Receiver: no secret": lambda: Receiver([]),
    "Receiver: empty secret": lambda: Receiver([""]),
    "Receiver: max_body_size": lambda: Receiver(["s"], max_body_size=0),
    "Receiver: an endless max_age": lambda: Receiver(["s"], max_age=float("inf")),
    "MemoryDeduplicator: an endless ttl": lambda: MemoryDeduplicator(ttl=float("inf")),
    "Receiver.on: no type": lambda: Receiver(["s"]).on(),
    "MemoryDeduplicator: ttl": lambda: MemoryDeduplicator(ttl=0),
    "RetryPolicy: max_attempts a bool": lambda: RetryPolicy(max_attempts=True),  # type: ignore[arg-type]
    "create_app: path": lambda: create_app(Receiver(["s"]), path="webhooks"),
    "Spool: synchronous": lambda: Spool("x.sqlite3", synchronous="OFF"),  # type: ignore[arg-type]
    "load_handler: spec": lambda: load_handler("no-colon"),
    "secrets_from_env: unset": lambda: secrets_from_env(environ={}),
    "plan_slices: naive bounds": lambda: plan_slices(
        datetime(2024, 1, 1), datetime(2024, 1, 2), DAY
    ),
    "plan_slices: reversed": lambda: plan_slices(LATER, EARLIER, DAY),
    "parse_duration: fortnight": lambda: parse_duration("1 fortnight"),
    "estimate: page size 0": lambda: estimate([], events_per_day=1, page_size=0),
    "Simulator: rate-limit mode": lambda: Simulator(rate_limit_mode="leaky"),  # type: ignore[arg-type]
    "Simulator: event shape": lambda: Simulator(event_shape="round"),  # type: ignore[arg-type]
    "Simulator: base_url before start": lambda: Simulator().base_url,
    "Faults: error rate above 1": lambda: Faults(error_rate=2.0),
    "make_webhook_payload: moment": lambda: make_webhook_payload("teleport"),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_bad_input_raises_an_asyncwifi_error(name: str) -> None:
    with pytest.raises(Exception) as caught:
        BAD_CALLS[name]()
    assert isinstance(caught.value, AsyncWifiError), (
        f"{name}: {type(caught.value).__name__}: {caught.value}"
    )


def test_configuration_errors_are_still_value_errors() -> None:
    # code written when these were plain ValueErrors keeps catching them
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
    assert issubclass(ConfigurationError, ValueError)
    assert issubclass(ClientStateError, RuntimeError)


async def test_a_spool_used_before_opening_raises_a_state_error(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool.sqlite3")
    with pytest.raises(ClientStateError):
        await spool.counts()
    receiver = Receiver(["s"])
    dispatcher = Dispatcher(receiver, spool)
    assert dispatcher is not None
