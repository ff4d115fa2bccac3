"""Spec §4.1 and §5: login, tokens, expiry, revocation (and the 401/403 answers)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import aiohttp

from asyncwifi.testing import Faults, Simulator
from tests._virtualclock import VirtualClock
from tests.simulator.conftest import CallerFactory
from tests.simulator.simhelpers import BOUNDARY, LOGIN, Caller, jwt_parts

EVENTS = "/v1/organizations/{}/events"


async def test_login_returns_an_hs256_service_jwt(caller: Caller, simulator: Simulator) -> None:
    assert caller.token is not None
    header, claims = jwt_parts(caller.token)
    assert header["alg"] == "HS256"
    assert claims["aud"] == "service"
    assert claims["iss"]
    assert claims["exp"] - claims["iat"] == 86_400  # spec §3: one day
    assert abs(claims["iat"] - simulator.clock.now()) < 5
    assert claims["id"] == simulator.user_id
    assert simulator.counters.logins == 1
    answer = await caller.get(EVENTS.format(simulator.organization), size="1")
    assert answer.status == 200


async def test_wrong_credentials_are_401_with_limit_headers(
    simulator: Simulator, session: aiohttp.ClientSession
) -> None:
    caller = Caller(simulator, session)
    for body in (
        {"clientKey": simulator.client_key, "clientSecret": "wrong"},
        {"clientKey": "nobody", "clientSecret": simulator.client_secret},
        {"clientKey": simulator.client_key},
        {},
    ):
        answer = await caller.call("POST", LOGIN, json_body=body, auth=False)
        assert answer.status == 401
        assert answer.json == {"message": "Unauthorized"}
        assert "X-RateLimit-Remaining-Minute" in answer.headers
    not_json = await caller.call("POST", LOGIN, headers={"Content-Type": "text/plain"}, auth=False)
    assert not_json.status == 409
    assert simulator.counters.login_failures == 4
    # every login attempt spends quota (spec §8 / DESIGN: the login counts too)
    assert simulator.counters.admitted == 5


async def test_missing_malformed_and_forged_tokens_are_403(
    caller: Caller, simulator: Simulator
) -> None:
    path = EVENTS.format(simulator.organization)
    assert caller.token is not None
    head, claims, _ = caller.token.split(".")
    forged_sig = hmac.new(b"another key", f"{head}.{claims}".encode(), hashlib.sha256).digest()
    forged = f"{head}.{claims}." + base64.urlsafe_b64encode(forged_sig).rstrip(b"=").decode()
    payload = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))
    payload["aud"] = "public"
    tampered_claims = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    cases = {
        "missing": None,
        "malformed": "Bearer not-a-jwt",
        "basic": "Basic dXNlcjpwYXNz",
        "signature": f"Bearer {forged}",
        "tampered": f"Bearer {head}.{tampered_claims}.{caller.token.split('.')[2]}",
    }
    for name, value in cases.items():
        headers = {} if value is None else {"Authorization": value}
        answer = await caller.call("GET", path, headers=headers, auth=value is not None)
        assert answer.status == 403, name
        assert answer.json == {"message": "Access Denied"}, name
        assert answer.headers["X-RateLimit-Limit-Minute"] == "60", name
    assert sum(simulator.counters.auth_failures.values()) == len(cases)


async def test_a_token_expires_after_its_lifetime(
    make_caller: CallerFactory,
) -> None:
    clock = VirtualClock.stepping(BOUNDARY)
    caller = await make_caller(clock=clock, token_ttl=3600.0)
    path = EVENTS.format(caller.sim.organization)
    assert (await caller.get(path, size="1")).status == 200
    clock.step(3599)
    assert (await caller.get(path, size="1")).status == 200
    clock.step(1)
    expired = await caller.get(path, size="1")
    assert expired.status == 403
    assert expired.json == {"message": "Access Denied"}
    assert caller.sim.counters.auth_failures["expired"] == 1
    # spec §3: expired -> login again -> a new valid token
    assert (await caller.login()).status == 200
    assert (await caller.get(path, size="1")).status == 200


async def test_logout_revokes_only_the_presented_token(make_caller: CallerFactory) -> None:
    first = await make_caller()
    second = Caller(first.sim, first.session)
    assert (await second.login()).status == 200
    path = EVENTS.format(first.sim.organization)
    out = await first.call("POST", "/v1/sts/logout")
    assert out.status == 200
    assert out.json == {"status": "OK"}
    assert (await first.get(path)).status == 403
    assert (await first.call("POST", "/v1/sts/logout")).status == 403  # stays revoked
    assert (await second.get(path)).status == 200
    assert first.sim.counters.auth_failures["revoked"] == 2
    assert first.sim.revoke_tokens() == 1  # the second one was still live
    assert (await second.get(path)).status == 403


async def test_tokens_revoked_early_by_the_fault(make_caller: CallerFactory) -> None:
    clock = VirtualClock.stepping(BOUNDARY)
    caller = await make_caller(clock=clock)
    caller.sim.faults = Faults(revoke_tokens_every=600.0)
    path = EVENTS.format(caller.sim.organization)
    clock.step(30)
    assert (await caller.login()).status == 200
    assert (await caller.get(path)).status == 200
    clock.step(600)  # past the next multiple of 600 s
    assert (await caller.get(path)).status == 403
    assert caller.sim.counters.faults["revocation"] == 1
    assert (await caller.login()).status == 200
    assert (await caller.get(path)).status == 200
