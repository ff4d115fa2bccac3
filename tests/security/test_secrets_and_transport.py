"""Security: no secret or token in logs, reprs or errors; https and TLS verification by
default; ids cannot reach another endpoint. (The webhook receiver's constant-time secret
check and its refusals are covered in tests/webhooks/test_receiver.py and test_app.py.)"""

from __future__ import annotations

import asyncio
import logging
import pickle
import shutil
import ssl
import subprocess
import traceback
from pathlib import Path
from urllib.parse import unquote

import pytest
from aiohttp import web

from asyncwifi import Client, Limits, RetryPolicy, ScaledClock, errors
from asyncwifi._auth import Secret, Token
from asyncwifi._transport import (
    AiohttpTransport,
    MockTransport,
    Request,
    Response,
)
from asyncwifi.models._auth import LoginRequest
from asyncwifi.testing import Faults, Simulator
from tests._recording import Recording
from tests.security._scan import error_text

SECRET = "s3cr3t-VALUE-that-must-never-show"
#: 2025-01-01T00:00:25Z: revocations every 90 clock s fall 65 s after the first login
START = 1_735_689_625.0


def leaks(text: str, secrets: set[str]) -> list[str]:
    return [s for s in secrets if s and s in text]


@pytest.mark.usefixtures("sdk_logs_propagate")
async def test_debug_logs_of_a_faulty_run_with_relogins_hold_no_secret_nor_token(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="asyncwifi")
    faults = Faults(seed=3, error_rate=0.05, drop_rate=0.02, revoke_tokens_every=90.0)
    clock = ScaledClock(100, start=START)
    async with Simulator(
        clock=clock, client_secret=SECRET, events=4_000, contacts=200, faults=faults
    ) as sim:
        transport = Recording(AiohttpTransport(sim.base_url))
        async with Client(
            sim.client_key,
            SECRET,
            base_url=sim.base_url,
            organization=sim.organization,
            clock=clock,
            allow_http=True,
            transport=transport,
            limits=Limits(minute_margin=5.0),
            retry=RetryPolicy(backoff_base=0.5, backoff_max=5.0, max_attempts=8),
        ) as api:
            ids = [e.id async for e in api.events.list(size=50)]
            contacts = [c.cid async for c in api.contacts.list(size=20, resume=True)]
            await api.segments.list()
            assert api.logins >= 2  # a revocation forced a new login
            client_repr = repr(api)
        assert ids == sim.data.event_ids()
        assert len(contacts) == 200
        assert sim.counters.faults["revocation"] > 0
    secrets = {SECRET, *transport.tokens}
    assert len(transport.tokens) >= 2
    text = caplog.text + "\n".join(
        "".join(traceback.format_exception(r.exc_info[1])) for r in caplog.records if r.exc_info
    )
    assert any(r.levelno == logging.DEBUG for r in caplog.records)
    assert not leaks(text, secrets)
    assert not leaks(client_repr, secrets)


def test_reprs_redact_the_secret_and_the_token() -> None:
    token_value = "eyJhbGciOiJIUzI1NiJ9.payload.signature"
    client = Client("ck_key", SECRET, base_url="https://api.example.com")
    token = Token(token_value, generation=1, issued_at=0.0, expires_at=60.0)
    for shown in (
        repr(client),
        str(client),
        repr(Secret(SECRET)),
        str(Secret(SECRET)),
        f"{Secret(SECRET)}",
        repr(token),
        str(token),
        repr(LoginRequest(client_key="ck_key", client_secret=SECRET)),
    ):
        assert SECRET not in shown
        assert token_value not in shown
    with pytest.raises(TypeError):
        pickle.dumps(Secret(SECRET))


async def test_401_and_403_errors_carry_neither_secret_nor_token() -> None:
    clock = ScaledClock(100)
    async with Simulator(clock=clock, client_secret=SECRET, events=10) as sim:
        wrong = SECRET + "-wrong"
        async with Client(
            sim.client_key,
            wrong,
            base_url=sim.base_url,
            clock=clock,
            allow_http=True,
            organization=sim.organization,
        ) as api:
            with pytest.raises(errors.UnauthorizedError) as unauthorized:
                await api.segments.list()
        assert not leaks(error_text(unauthorized.value), {SECRET, wrong})

        transport = Recording(AiohttpTransport(sim.base_url))
        async with Client(
            sim.client_key,
            SECRET,
            base_url=sim.base_url,
            clock=clock,
            allow_http=True,
            organization=sim.organization,
            transport=transport,
        ) as api:
            await api.login()
            # another tenant's organization: a permission refusal (one relogin, then raised)
            with pytest.raises(errors.ForbiddenError) as forbidden:
                await api.segments.list(organization="org-of-someone-else")
        assert transport.tokens
        assert not leaks(error_text(forbidden.value), {SECRET, *transport.tokens})


def test_plain_http_is_refused_unless_allowed() -> None:
    with pytest.raises(errors.ConfigurationError, match="http"):
        Client("ck", SECRET, base_url="http://api.example.com")
    with pytest.raises(errors.ConfigurationError):
        Client("ck", SECRET, base_url="ftp://api.example.com", allow_http=True)
    Client("ck", SECRET, base_url="http://127.0.0.1:1", allow_http=True)  # allowed: no raise


async def test_tls_verification_is_on_by_default() -> None:
    transport = AiohttpTransport("https://api.example.com")
    session = transport._open()
    try:
        assert transport._ssl is True  # aiohttp's verifying default context
        assert session.connector is not None
        assert session.connector._ssl is True  # type: ignore[attr-defined]
    finally:
        await transport.aclose()


@pytest.fixture
def self_signed(tmp_path: Path) -> ssl.SSLContext:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl CLI not found (needed to make a self-signed certificate)")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    return ctx


async def test_a_self_signed_server_is_refused_with_a_tls_error(
    self_signed: ssl.SSLContext,
) -> None:
    hits = 0

    async def handler(request: web.Request) -> web.Response:
        nonlocal hits
        hits += 1
        return web.json_response({"token": "x"})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=self_signed)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with Client("ck", SECRET, base_url=f"https://127.0.0.1:{port}") as api:
            with pytest.raises(errors.TransportError) as failed:
                await api.login()
        assert failed.value.kind == "tls"
        assert hits == 0  # the secret never left: the handshake failed first
    finally:
        await runner.cleanup()
        await asyncio.sleep(0)


HOSTILE_IDS = [
    "../../v2/segments/organizations/x",
    "a/b",
    "..",
    ".",
    "x?organization=other",
    "x#frag",
    "a%2Fb",
    "%2E%2E",
    "id with space",
]


@pytest.mark.parametrize("hostile", HOSTILE_IDS)
async def test_an_id_cannot_reach_another_endpoint(hostile: str) -> None:
    def handler(request: Request) -> Response:
        if request.path == "/v1/sts/login/services":
            return Response(200, {}, b'{"token": "t"}')
        return Response(404, {}, b'{"message": "Not found"}')

    mock = MockTransport(handler)
    async with Client(
        "ck", SECRET, base_url="https://api.example.com", transport=mock, organization="org"
    ) as api:
        with pytest.raises(errors.NotFoundError):
            await api.hotspots.get(hostile)
    path = mock.requests[-1].path
    assert path.startswith("/v3/hotspots/")
    segment = path.removeprefix("/v3/hotspots/")
    assert "/" not in segment
    assert "?" not in segment
    assert "#" not in segment
    assert segment not in (".", "..")
    assert unquote(segment) == hostile  # the id itself, encoded into one segment
    assert mock.requests[-1].params in (None, {}) or "organization" not in (
        mock.requests[-1].params or {}
    )


async def test_hostile_ids_reach_only_the_hotspot_route_of_the_simulator() -> None:
    async with Simulator(clock=ScaledClock(100), events=10) as sim:
        async with Client(
            sim.client_key,
            sim.client_secret,
            base_url=sim.base_url,
            allow_http=True,
            organization=sim.organization,
            clock=sim.clock,
        ) as api:
            for hostile in HOSTILE_IDS:
                with pytest.raises(errors.NotFoundError):
                    await api.hotspots.get(hostile)
        routes = set(sim.counters.by_endpoint) - {"POST /v1/sts/login/services"}
        assert routes == {"GET /v3/hotspots/{hotspotId}"}, routes
        assert sim.counters.by_endpoint["GET /v3/hotspots/{hotspotId}"] == len(HOSTILE_IDS)
