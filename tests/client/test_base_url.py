"""A wrong base URL is a configuration error said at once; a server that answered before and
then went away is an outage, retried (issue 33, item 9). A host that never answers, a path
with no login route and a page that is not JSON are wrong URLs too (issue 40)."""

from __future__ import annotations

import asyncio
import socket

import aiohttp
import pytest
from aiohttp import web
from aiohttp.client_reqrep import ConnectionKey

from asyncwifi import Client, RetryPolicy, ScaledClock
from asyncwifi._transport import _classify, _unreachable
from asyncwifi.errors import ConfigurationError, DecodeError, TransportError
from asyncwifi.testing import Faults, Simulator
from tests.client._other_server import OtherServer, SilentServer
from tests.client._support import NO_LIMITS, client_for


def _closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _first_call_error(api: Client) -> ConfigurationError:
    """What the client's first call (a segments list) raises: a ConfigurationError."""
    async with api:
        with pytest.raises(ConfigurationError) as caught:
            await api.segments.list()
    return caught.value


def _retries(api: Client) -> list[object]:
    seen: list[object] = []
    api.add_hook("retry", seen.append)
    return seen


async def test_a_refused_first_login_names_the_url_and_the_setting_at_once() -> None:
    url = f"http://user:hunter2@127.0.0.1:{_closed_port()}"
    api = Client("key", "secret", base_url=url, allow_http=True, limits=NO_LIMITS, organization="o")
    retries = _retries(api)
    error = await _first_call_error(api)
    message = str(error)
    assert f"http://user:***@127.0.0.1:{url.rsplit(':', 1)[1]}" in message
    assert "refused" in message
    assert "set by base_url" in message
    assert "hunter2" not in message
    assert isinstance(error.__cause__, TransportError)
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


# -- issue 40: a host that never answers, a path, a page that is not JSON -------------------


async def test_a_host_that_never_answers_is_a_wrong_url_after_two_timeouts() -> None:
    """Eight calls at once on a host that takes the connection and says nothing: one login,
    two attempts of one timeout each, then the one error every caller gets (was: 5 attempts
    per login, each call its own logins: 10 x 30 s for one command)."""
    async with SilentServer() as silent:
        api = Client("key", "secret", base_url=silent.base_url, allow_http=True,
                     limits=NO_LIMITS, organization="o", timeout=0.3)  # fmt: skip
        retries = _retries(api)
        async with api:
            outcomes = await asyncio.gather(
                *(api.segments.list() for _ in range(8)), return_exceptions=True
            )
        assert silent.accepted == 2
    assert all(isinstance(o, ConfigurationError) for o in outcomes), outcomes
    message = str(outcomes[0])
    assert silent.base_url in message
    assert "no answer" in message
    assert "set by base_url" in message
    assert len(retries) == 1


async def test_a_host_that_answered_before_then_times_out_is_retried_as_an_outage() -> None:
    """The first-contact rule is for a URL where nothing ever answered: the same host timing
    out after answering is retried by the policy, as before."""
    async with Simulator(rate_limit_mode="off", contacts=5) as sim:
        policy = RetryPolicy(max_attempts=2, backoff_base=0.01, backoff_max=0.02)
        api = client_for(sim, limits=NO_LIMITS, retry=policy, timeout=1.0)
        retries = _retries(api)
        async with api:
            await api.login()
            sim.faults = Faults(latency=60.0)  # every answer later than the timeout
            with pytest.raises(TransportError) as caught:
                await api.segments.list()
    assert not isinstance(caught.value, ConfigurationError)
    assert caught.value.kind == "timeout"
    assert len(retries) == 1  # the policy's two attempts


@pytest.mark.parametrize("tail", ["/v1", "/api/v1/", "/API/V2"])
def test_a_base_url_ending_with_the_version_is_refused_before_any_request(tail: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        Client("key", "secret", base_url=f"https://api.example.net{tail}")
    message = str(caught.value)
    assert f"https://api.example.net{tail}" in message
    assert "doubled" in message
    assert "set by base_url" in message


async def test_a_base_url_whose_path_has_no_login_route_says_so() -> None:
    async with Simulator(rate_limit_mode="off", contacts=5) as sim:
        url = sim.base_url + "/api/"
        message = str(await _first_call_error(client_for(sim, url, limits=NO_LIMITS)))
    assert f"{url.rstrip('/')} has no login route" in message
    assert "404" in message
    assert "it has a path (/api)" in message
    assert "set by base_url" in message


def _html(_path: str) -> web.Response:
    return web.Response(body=b"<html><title>Sign in</title></html>", content_type="text/html")


async def test_a_list_answered_in_html_names_the_type_and_the_url_at_once() -> None:
    async with (
        Simulator(rate_limit_mode="off", contacts=5) as sim,
        OtherServer(sim, answer=lambda p: _html(p) if "segments" in p else None) as other,
    ):
        api = client_for(other.sim, other.base_url, limits=NO_LIMITS)
        async with api:
            with pytest.raises(DecodeError) as caught:
                await api.segments.list()
        assert other.count("/segments") == 1  # not retried: the page is what it meant
    path = f"/v2/segments/organizations/{sim.organization}"
    assert str(caught.value) == (
        f"the server answered GET {other.base_url}{path} with text/html, not JSON "
        "(a proxy or a wrong base URL?)"
    )
    assert caught.value.content_type == "text/html"


async def test_a_login_answered_in_html_is_a_wrong_base_url() -> None:
    async with (
        Simulator(rate_limit_mode="off", contacts=5) as sim,
        OtherServer(sim, answer=_html) as other,
    ):
        api = client_for(sim, other.base_url, limits=NO_LIMITS)
        async with api:
            with pytest.raises(ConfigurationError) as caught:
                await api.login()
    assert "with text/html, not JSON" in str(caught.value)
    assert "check the base URL (set by base_url)" in str(caught.value)
