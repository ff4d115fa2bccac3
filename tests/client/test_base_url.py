"""A wrong base URL is a configuration error said at once; a server that answered before and
then went away is an outage, retried (issue 33, item 9)."""

from __future__ import annotations

import socket

import aiohttp
import pytest
from aiohttp.client_reqrep import ConnectionKey

from asyncwifi import Client, RetryPolicy, ScaledClock
from asyncwifi._transport import _classify, _unreachable
from asyncwifi.errors import ConfigurationError, TransportError
from asyncwifi.testing import Simulator
from tests.client._support import NO_LIMITS


def _closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _retries(api: Client) -> list[object]:
    seen: list[object] = []
    api.add_hook("retry", seen.append)
    return seen


async def test_a_refused_first_login_names_the_url_and_the_setting_at_once() -> None:
    url = f"http://user:hunter2@127.0.0.1:{_closed_port()}"
    api = Client("key", "secret", base_url=url, allow_http=True, limits=NO_LIMITS, organization="o")
    retries = _retries(api)
    async with api:
        with pytest.raises(ConfigurationError) as caught:
            await api.segments.list()
    message = str(caught.value)
    assert f"http://user:***@127.0.0.1:{url.rsplit(':', 1)[1]}" in message
    assert "refused" in message
    assert "set by base_url" in message
    assert "hunter2" not in message
    assert isinstance(caught.value.__cause__, TransportError)
    assert retries == []  # at once: no retry, no backoff


async def test_from_env_names_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("ASYNCWIFI_CLIENT_KEY", "key")
    monkeypatch.setenv("ASYNCWIFI_CLIENT_SECRET", "secret")
    monkeypatch.setenv("ASYNCWIFI_BASE_URL", url)
    monkeypatch.setenv("ASYNCWIFI_ALLOW_HTTP", "1")
    async with Client.from_env(limits=NO_LIMITS) as api:
        with pytest.raises(ConfigurationError, match=r"set by ASYNCWIFI_BASE_URL"):
            await api.login()


async def test_a_server_that_answered_before_and_went_away_is_an_outage() -> None:
    sim = Simulator(clock=ScaledClock(100), rate_limit_mode="off", contacts=5)
    await sim.start()
    api = Client(
        sim.client_key,
        sim.client_secret,
        base_url=sim.base_url,
        allow_http=True,
        clock=sim.clock,
        organization=sim.organization,
        limits=NO_LIMITS,
        retry=RetryPolicy(max_attempts=3, backoff_base=0.01, backoff_max=0.02),
    )
    retries = _retries(api)
    async with api:
        assert len(await api.segments.list()) == 6
        await sim.stop()
        with pytest.raises(TransportError) as caught:
            await api.segments.list()
    assert not isinstance(caught.value, ConfigurationError)
    assert caught.value.unreachable
    assert len(retries) == 2  # the retry policy as before: 3 attempts


def test_a_name_that_does_not_resolve_is_unreachable() -> None:
    key = ConnectionKey("no-such-host.invalid", 443, True, True, None, None, None)
    dns = aiohttp.ClientConnectorError(key, socket.gaierror(-2, "Name or service not known"))
    refused = aiohttp.ClientConnectorError(key, ConnectionRefusedError(111, "refused"))
    reset = aiohttp.ClientConnectorError(key, ConnectionResetError(104, "reset"))
    assert _unreachable(dns)
    assert _unreachable(refused)
    assert not _unreachable(reset)
    assert not _unreachable(aiohttp.ConnectionTimeoutError())
    assert _classify(dns) == (
        "connect",
        "cannot connect: host name not found (ClientConnectorError)",
    )
    assert _classify(refused)[1].startswith("cannot connect: refused")
